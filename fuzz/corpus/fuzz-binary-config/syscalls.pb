B
@
linux.ftrace¢/
raw_syscalls/sys_enter
raw_syscalls/sys_exit