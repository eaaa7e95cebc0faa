# geofs_spoke_journal: the spoke's write journal and the uploader that
# commits it at the hub.
add_library(geofs_spoke_journal STATIC write_journal.cc journal_uploader.cc)
target_link_libraries(geofs_spoke_journal PUBLIC geofs_hub_api geofs_chunk geofs_common)
