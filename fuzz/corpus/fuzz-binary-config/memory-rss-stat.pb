<
:
linux.ftrace¢)
kmem/rss_stat
mm_event/mm_event_record

linux.process_stats