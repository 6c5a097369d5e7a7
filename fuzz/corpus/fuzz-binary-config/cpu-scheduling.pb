≤
Ø
linux.ftrace¢ù
sched/sched_switch
sched/sched_process_exit
sched/sched_process_free
task/task_newtask
task/task_rename
sched/sched_wakeup_new
sched/sched_wakingb

linux.process_stats