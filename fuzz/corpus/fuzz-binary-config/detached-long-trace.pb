
€€!

linux.ftrace¢
sched_switch@Hˆ'