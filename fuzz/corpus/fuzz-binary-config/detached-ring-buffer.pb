
€€!

linux.ftrace¢
sched_switch@H€”ëÜ