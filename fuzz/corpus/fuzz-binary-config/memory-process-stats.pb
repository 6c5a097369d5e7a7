

linux.process_statsº è