#include "spoke/spoke_counters.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace geofs::spoke {
namespace {

// The plain numeric counters, in display order. Prometheus names are
// "geofs_spoke_" + key (+ "_total" for counters); JSON keys are `key`.
struct Field {
  const char* key;
  const char* help;
  bool counter;  // monotonic; else a gauge
  uint64_t SpokeCounters::*member;
};

constexpr Field kFields[] = {
    {"metadata_hits", "Metadata answered from the cache", true, &SpokeCounters::metadata_hits},
    {"metadata_misses", "Metadata fetched from the hub", true, &SpokeCounters::metadata_misses},
    {"chunk_hits", "Chunks read from the cache", true, &SpokeCounters::chunk_hits},
    {"chunk_misses", "Chunks fetched from the hub", true, &SpokeCounters::chunk_misses},
    {"bytes_from_hub", "Chunk bytes received from the hub (stored form)", true,
     &SpokeCounters::bytes_from_hub},
    {"bytes_from_cache", "Chunk bytes served from the cache", true,
     &SpokeCounters::bytes_from_cache},
    {"leases_held", "Inodes under a live lease", false, &SpokeCounters::leases_held},
    {"invalidations", "Invalidations received from the hub", true, &SpokeCounters::invalidations},
    {"hub_changes", "Namespace changes sent to the hub", true, &SpokeCounters::hub_changes},
    {"hub_change_calls", "Hub calls carrying namespace changes (batches and single calls)", true,
     &SpokeCounters::hub_change_calls},
    {"changes_deferred", "Namespace changes that had to wait for another spoke", true,
     &SpokeCounters::changes_deferred},
    {"journal_files", "Files with writes not yet committed at the hub", false,
     &SpokeCounters::journal_files},
    {"journal_bytes", "Written bytes not yet committed at the hub", false,
     &SpokeCounters::journal_bytes},
    {"journal_log_bytes", "Bytes the write journal occupies on disk", false,
     &SpokeCounters::journal_log_bytes},
    {"local_creates", "CREATEs answered by the spoke itself (write-behind)", true,
     &SpokeCounters::local_creates},
    {"local_creates_pending", "Creates answered by the spoke, not yet at the hub", false,
     &SpokeCounters::local_creates_pending},
    {"local_creates_cancelled", "Creates answered by the spoke and removed before sent", true,
     &SpokeCounters::local_creates_cancelled},
    {"local_create_conflicts", "Creates kept under another name: the name was taken meanwhile",
     true, &SpokeCounters::local_create_conflicts},
    {"local_creates_lost", "Creates answered by the spoke that the hub refused", true,
     &SpokeCounters::local_creates_lost},
    {"reads", "READs served", true, &SpokeCounters::reads},
    {"read_hits", "READs whose chunks were all in the cache", true, &SpokeCounters::read_hits},
    {"read_joined", "READs that waited for a chunk already on its way", true,
     &SpokeCounters::read_joined},
    {"read_stall_microseconds", "Time READs that were not hits waited", true,
     &SpokeCounters::read_stall_microseconds},
    {"prefetch_issued_bytes", "Chunk bytes the prefetcher fetched", true,
     &SpokeCounters::prefetch_issued_bytes},
    {"prefetch_used_bytes", "Prefetched bytes read after they landed", true,
     &SpokeCounters::prefetch_used_bytes},
    {"prefetch_late_bytes", "Prefetched bytes read while still on their way", true,
     &SpokeCounters::prefetch_late_bytes},
    {"prefetch_wasted_bytes", "Prefetched bytes not read within the horizon", true,
     &SpokeCounters::prefetch_wasted_bytes},
    {"prefetch_sequential_issued_bytes", "Bytes the sequential predictor fetched", true,
     &SpokeCounters::prefetch_sequential_issued_bytes},
    {"prefetch_sequential_used_bytes", "Of those, read", true,
     &SpokeCounters::prefetch_sequential_used_bytes},
    {"prefetch_tree_issued_bytes", "Bytes the tree predictor fetched", true,
     &SpokeCounters::prefetch_tree_issued_bytes},
    {"prefetch_tree_used_bytes", "Of those, read", true, &SpokeCounters::prefetch_tree_used_bytes},
    {"prefetch_inflight_bytes", "Prefetched bytes on their way now", false,
     &SpokeCounters::prefetch_inflight_bytes},
    {"prefetch_window_bytes", "Prefetch bytes allowed in flight (from bandwidth x RTT)", false,
     &SpokeCounters::prefetch_window_bytes},
    {"prefetch_unread_bytes", "Prefetched bytes not read yet", false,
     &SpokeCounters::prefetch_unread_bytes},
    {"prefetch_dirs_described", "Directory pages described for prefetch", true,
     &SpokeCounters::prefetch_dirs_described},
    {"session", "Hub session id (0: none)", false, &SpokeCounters::session},
    {"hub_reconnects", "Sessions opened after a lost one", true, &SpokeCounters::hub_reconnects},
};

constexpr HubLinkState kLinkStates[] = {HubLinkState::kUp, HubLinkState::kReconnecting,
                                        HubLinkState::kDown};
constexpr char kImmutable[] = "immutable";
constexpr char kStrict[] = "strict";

// A label value with \, " and newline escaped (the exposition format's rule).
std::string Label(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void Header(std::string& out, const std::string& name, const char* help, const char* type) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void Sample(std::string& out, const std::string& name, const SpokeCounters& c,
            const std::string& value, std::string_view extra_labels = {}) {
  out += name + "{export=\"" + Label(c.export_path) + "\"";
  if (!extra_labels.empty()) {
    out += ",";
    out += extra_labels;
  }
  out += "} " + value + "\n";
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", s);
  return buf;
}

Status Malformed(const std::string& what) {
  return Status::Corruption("malformed spoke stats: " + what);
}

}  // namespace

std::string_view HubLinkStateName(HubLinkState state) {
  switch (state) {
    case HubLinkState::kUp:
      return "up";
    case HubLinkState::kReconnecting:
      return "reconnecting";
    case HubLinkState::kDown:
      return "down";
  }
  return "down";
}

std::string RenderPrometheus(std::span<const SpokeCounters> exports) {
  std::string out;
  for (const Field& f : kFields) {
    const std::string name = std::string("geofs_spoke_") + f.key + (f.counter ? "_total" : "");
    Header(out, name, f.help, f.counter ? "counter" : "gauge");
    for (const SpokeCounters& c : exports) Sample(out, name, c, std::to_string(c.*f.member));
  }
  Header(out, "geofs_spoke_hub_connected", "1 when the hub answers", "gauge");
  for (const SpokeCounters& c : exports) {
    Sample(out, "geofs_spoke_hub_connected", c, c.hub_link != HubLinkState::kDown ? "1" : "0");
  }
  Header(out, "geofs_spoke_hub_link", "1 for the hub link's current state", "gauge");
  for (const SpokeCounters& c : exports) {
    for (HubLinkState s : kLinkStates) {
      Sample(out, "geofs_spoke_hub_link", c, c.hub_link == s ? "1" : "0",
             "state=\"" + std::string(HubLinkStateName(s)) + "\"");
    }
  }
  Header(out, "geofs_spoke_hub_state_seconds", "Time in the current hub link state", "gauge");
  for (const SpokeCounters& c : exports) {
    Sample(out, "geofs_spoke_hub_state_seconds", c, Seconds(c.hub_state_seconds));
  }
  Header(out, "geofs_spoke_immutable", "1 when the portal is served as immutable", "gauge");
  for (const SpokeCounters& c : exports) {
    Sample(out, "geofs_spoke_immutable", c, c.immutable ? "1" : "0");
  }
  return out;
}

std::string RenderJson(std::span<const SpokeCounters> exports, int indent) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const SpokeCounters& c : exports) {
    nlohmann::ordered_json e;
    e["export"] = c.export_path;
    e["hub"] = c.hub;
    e["hub_link"] = HubLinkStateName(c.hub_link);
    e["hub_state_seconds"] = c.hub_state_seconds;
    e["mode"] = c.immutable ? kImmutable : kStrict;
    for (const Field& f : kFields) e[f.key] = c.*f.member;
    list.push_back(std::move(e));
  }
  nlohmann::ordered_json doc;
  doc["exports"] = std::move(list);
  return doc.dump(indent);
}

Result<std::vector<SpokeCounters>> ParseJson(std::string_view text) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Malformed("not JSON");
  auto exports = doc.find("exports");
  if (!doc.is_object() || exports == doc.end() || !exports->is_array()) {
    return Malformed("no \"exports\" array");
  }
  std::vector<SpokeCounters> out;
  for (const nlohmann::json& e : *exports) {
    if (!e.is_object()) return Malformed("an export is not an object");
    const std::string where = "export #" + std::to_string(out.size());
    auto text_field = [&](const char* key) -> Result<std::string> {
      auto it = e.find(key);
      if (it == e.end() || !it->is_string()) {
        return Malformed(where + ": \"" + key + "\" missing or not a string");
      }
      return it->get<std::string>();
    };
    SpokeCounters c;
    GEOFS_ASSIGN_OR_RETURN(c.export_path, text_field("export"));
    GEOFS_ASSIGN_OR_RETURN(c.hub, text_field("hub"));
    GEOFS_ASSIGN_OR_RETURN(std::string link, text_field("hub_link"));
    bool known_link = false;
    for (HubLinkState s : kLinkStates) {
      if (link == HubLinkStateName(s)) {
        c.hub_link = s;
        known_link = true;
      }
    }
    if (!known_link) return Malformed(where + ": unknown hub_link \"" + link + "\"");
    GEOFS_ASSIGN_OR_RETURN(std::string mode, text_field("mode"));
    if (mode != kImmutable && mode != kStrict) {
      return Malformed(where + ": unknown mode \"" + mode + "\"");
    }
    c.immutable = mode == kImmutable;
    auto seconds = e.find("hub_state_seconds");
    if (seconds == e.end() || !seconds->is_number()) {
      return Malformed(where + ": \"hub_state_seconds\" missing or not a number");
    }
    c.hub_state_seconds = seconds->get<double>();
    for (const Field& f : kFields) {
      auto it = e.find(f.key);
      if (it == e.end() || !it->is_number_unsigned()) {
        return Malformed(where + ": \"" + f.key + "\" missing or not a count");
      }
      c.*f.member = it->get<uint64_t>();
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace geofs::spoke
