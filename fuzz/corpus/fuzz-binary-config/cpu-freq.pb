N
L
linux.ftrace¢;
power/cpu_frequency
power/cpu_idle
power/suspend_resume

linux.sys_statsÂ@ô

linux.system_info