// SpokeCounters: one snapshot of a spoke's counters for one export, and its
// two renderings: Prometheus text (GET /metrics) and a JSON document
// (GET /stats.json, read back by `geofsctl --spoke ADDR stats`). Both are
// driven by one table of fields in spoke_counters.cc, so a counter added
// there appears in both.
//
// Library geofs_spoke_counters: no gRPC, so geofsctl links it cheaply.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "geofs/status.h"

namespace geofs::spoke {

enum class HubLinkState {
  kUp,            // the session stream is open: leases are granted
  kReconnecting,  // the hub answers but no session is open (being re-established)
  kDown,          // the hub is unreachable; the link retries with backoff
};

// "up", "reconnecting", "down".
std::string_view HubLinkStateName(HubLinkState state);

struct SpokeCounters {
  std::string export_path;  // e.g. "/datasets"
  std::string hub;          // the hub's address, HOST:PORT

  uint64_t metadata_hits = 0;
  uint64_t metadata_misses = 0;
  uint64_t chunk_hits = 0;
  uint64_t chunk_misses = 0;
  uint64_t bytes_from_hub = 0;    // stored-form chunk bytes received (WAN bytes)
  uint64_t bytes_from_cache = 0;  // raw chunk bytes served from the cache
  uint64_t leases_held = 0;       // inodes under a live lease
  uint64_t invalidations = 0;     // invalidations received from the hub
  uint64_t hub_changes = 0;       // namespace changes sent to the hub
  uint64_t hub_change_calls = 0;  // hub calls that carried them (batches and single calls)
  uint64_t changes_deferred = 0;  // changes the hub deferred: they waited for another spoke

  // Journal depth: written through this spoke, not yet committed at the hub.
  uint64_t journal_files = 0;
  uint64_t journal_bytes = 0;      // payload bytes pending
  uint64_t journal_log_bytes = 0;  // bytes the journal's log occupies on disk

  // Write-behind of creates: CREATEs answered here, and what became of them.
  uint64_t local_creates = 0;
  uint64_t local_creates_pending = 0;    // not yet at the hub
  uint64_t local_creates_cancelled = 0;  // removed before they were sent
  uint64_t local_create_conflicts = 0;   // the name was taken: kept under another
  uint64_t local_creates_lost = 0;       // refused by the hub

  // Demand READs and the prefetcher (docs/prefetch.md).
  uint64_t reads = 0;
  uint64_t read_hits = 0;             // every chunk was in the cache
  uint64_t read_joined = 0;           // some chunk was on its way already
  uint64_t read_stall_microseconds = 0;  // waits of READs that were not hits
  uint64_t prefetch_issued_bytes = 0;
  uint64_t prefetch_used_bytes = 0;    // read after they landed
  uint64_t prefetch_late_bytes = 0;    // read while on their way
  uint64_t prefetch_wasted_bytes = 0;  // not read within the horizon
  uint64_t prefetch_sequential_issued_bytes = 0;
  uint64_t prefetch_sequential_used_bytes = 0;
  uint64_t prefetch_tree_issued_bytes = 0;
  uint64_t prefetch_tree_used_bytes = 0;
  uint64_t prefetch_inflight_bytes = 0;
  uint64_t prefetch_window_bytes = 0;
  uint64_t prefetch_unread_bytes = 0;
  uint64_t prefetch_dirs_described = 0;

  HubLinkState hub_link = HubLinkState::kDown;
  double hub_state_seconds = 0;  // how long the link has been up / not up
  uint64_t session = 0;          // the hub session id; 0: none
  uint64_t hub_reconnects = 0;   // sessions opened after a lost one
  bool immutable = false;        // portal mode: immutable, else strict
};

// Prometheus text exposition (version 0.0.4): each metric once, with one
// sample per export labelled export="...".
std::string RenderPrometheus(std::span<const SpokeCounters> exports);

// {"exports": [{"export": ..., "hub": ..., "hub_link": "up", "mode": "strict",
//   "metadata_hits": ..., ...}]}. indent < 0: compact.
std::string RenderJson(std::span<const SpokeCounters> exports, int indent = -1);

// The inverse of RenderJson. kCorruption naming the problem when `text` is
// not such a document (bad JSON, a missing or mistyped field, an unknown
// link state or mode); fields it does not know are ignored.
Result<std::vector<SpokeCounters>> ParseJson(std::string_view text);

}  // namespace geofs::spoke
