S
Q
linux.ftrace¢@
lowmemorykiller/lowmemory_kill
oom/oom_score_adj_updatelmkd