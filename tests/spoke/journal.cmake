# The write journal on its own (fault injection through JournalIo).
geofs_add_test(journal_test SOURCES journal_test.cc LIBS geofs_spoke_journal)

# The uploader against a geofs-hubd process.
geofs_add_test(journal_uploader_test
  SOURCES journal_uploader_test.cc
  LIBS geofs_spoke_journal geofs_test_hub geofs_test_ports
  LABELS integration)

# The uploader's window pipeline against an in-process recording hub.
geofs_add_test(journal_uploader_pipeline_test
  SOURCES journal_uploader_pipeline_test.cc
  LIBS geofs_spoke_journal)
