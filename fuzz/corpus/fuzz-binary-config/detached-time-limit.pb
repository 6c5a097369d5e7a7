
€€!

linux.ftrace¢
sched_switchN@