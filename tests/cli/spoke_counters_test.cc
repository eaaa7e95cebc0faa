// SpokeCounters rendered as Prometheus text and as JSON, the JSON parsed
// back, and the metrics endpoint's routing.
#include "spoke/spoke_counters.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "spoke/metrics_http.h"

namespace geofs::spoke {
namespace {

SpokeCounters Sample() {
  SpokeCounters c;
  c.export_path = "/data\"sets";
  c.hub = "10.0.0.1:7000";
  c.metadata_hits = 1;
  c.metadata_misses = 2;
  c.chunk_hits = 3;
  c.chunk_misses = 4;
  c.bytes_from_hub = 5;
  c.bytes_from_cache = 1ull << 40;
  c.leases_held = 7;
  c.invalidations = 8;
  c.journal_files = 9;
  c.journal_bytes = 10;
  c.journal_log_bytes = 11;
  c.hub_link = HubLinkState::kReconnecting;
  c.hub_state_seconds = 1.5;
  c.session = 12;
  c.hub_reconnects = 13;
  c.hub_changes = 14;
  c.hub_change_calls = 15;
  c.changes_deferred = 16;
  c.immutable = true;
  return c;
}

TEST(SpokeCountersTest, JsonRoundTripsEveryField) {
  const SpokeCounters c = Sample();
  const std::string text = RenderJson({&c, 1});
  auto back = ParseJson(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << text;
  ASSERT_EQ(back->size(), 1u);
  const SpokeCounters& b = back->front();
  EXPECT_EQ(b.export_path, c.export_path);
  EXPECT_EQ(b.hub, c.hub);
  EXPECT_EQ(b.metadata_hits, 1u);
  EXPECT_EQ(b.metadata_misses, 2u);
  EXPECT_EQ(b.chunk_hits, 3u);
  EXPECT_EQ(b.chunk_misses, 4u);
  EXPECT_EQ(b.bytes_from_hub, 5u);
  EXPECT_EQ(b.bytes_from_cache, 1ull << 40);
  EXPECT_EQ(b.leases_held, 7u);
  EXPECT_EQ(b.invalidations, 8u);
  EXPECT_EQ(b.journal_files, 9u);
  EXPECT_EQ(b.journal_bytes, 10u);
  EXPECT_EQ(b.journal_log_bytes, 11u);
  EXPECT_EQ(b.hub_link, HubLinkState::kReconnecting);
  EXPECT_DOUBLE_EQ(b.hub_state_seconds, 1.5);
  EXPECT_EQ(b.session, 12u);
  EXPECT_EQ(b.hub_reconnects, 13u);
  EXPECT_EQ(b.hub_changes, 14u);
  EXPECT_EQ(b.hub_change_calls, 15u);
  EXPECT_EQ(b.changes_deferred, 16u);
  EXPECT_TRUE(b.immutable);

  auto doc = nlohmann::json::parse(text);
  EXPECT_EQ(doc["exports"][0]["hub_link"], "reconnecting");
  EXPECT_EQ(doc["exports"][0]["mode"], "immutable");
}

TEST(SpokeCountersTest, PrometheusHasEveryMetricOncePerExport) {
  SpokeCounters a = Sample();
  SpokeCounters b = Sample();
  b.export_path = "/other";
  b.hub_link = HubLinkState::kUp;
  b.immutable = false;
  const SpokeCounters both[] = {a, b};
  const std::string text = RenderPrometheus(both);
  // Integers stay exact (no exponent notation), labels are escaped.
  EXPECT_NE(
      text.find("geofs_spoke_bytes_from_cache_total{export=\"/data\\\"sets\"} 1099511627776\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("geofs_spoke_journal_files{export=\"/other\"} 9\n"), std::string::npos);
  EXPECT_NE(text.find("geofs_spoke_hub_link{export=\"/other\",state=\"up\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("geofs_spoke_hub_link{export=\"/other\",state=\"down\"} 0\n"),
            std::string::npos);
  EXPECT_NE(text.find("geofs_spoke_hub_connected{export=\"/other\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("geofs_spoke_immutable{export=\"/other\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("geofs_spoke_hub_state_seconds{export=\"/other\"} 1.500\n"),
            std::string::npos);
  // One TYPE line per metric however many exports.
  size_t types = 0;
  for (size_t at = 0;
       (at = text.find("# TYPE geofs_spoke_chunk_hits_total counter", at)) != std::string::npos;
       ++at) {
    ++types;
  }
  EXPECT_EQ(types, 1u);
  // Each JSON counter has its Prometheus sample.
  auto doc = nlohmann::json::parse(RenderJson({&a, 1}));
  for (const auto& [key, value] : doc["exports"][0].items()) {
    if (!value.is_number_unsigned()) continue;
    EXPECT_NE(text.find("geofs_spoke_" + key), std::string::npos) << key;
  }
}

TEST(SpokeCountersTest, ParseRejectsMalformedDocuments) {
  const SpokeCounters c = Sample();
  auto good = nlohmann::json::parse(RenderJson({&c, 1}));
  auto expect_bad = [](const std::string& text, const std::string& needle) {
    auto r = ParseJson(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
    EXPECT_NE(r.status().ToString().find(needle), std::string::npos) << r.status().ToString();
  };
  expect_bad("", "not JSON");
  expect_bad("# HELP geofs_spoke_x\n", "not JSON");
  expect_bad("[1,2]", "exports");
  expect_bad("{\"exports\": {}}", "exports");
  expect_bad("{\"exports\": [3]}", "not an object");

  auto missing = good;
  missing["exports"][0].erase("chunk_hits");
  expect_bad(missing.dump(), "chunk_hits");
  auto negative = good;
  negative["exports"][0]["journal_bytes"] = -1;
  expect_bad(negative.dump(), "journal_bytes");
  auto state = good;
  state["exports"][0]["hub_link"] = "sideways";
  expect_bad(state.dump(), "sideways");
  auto mode = good;
  mode["exports"][0]["mode"] = 1;
  expect_bad(mode.dump(), "mode");

  auto extra = good;
  extra["exports"][0]["future_counter"] = 5;
  EXPECT_TRUE(ParseJson(extra.dump()).ok());
  EXPECT_TRUE(ParseJson("{\"exports\": []}").ok());
}

// One HTTP/1.0 exchange with 127.0.0.1:port.
std::string Exchange(uint16_t port, const std::string& request) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  std::string response;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size())) {
    char buf[4096];
    ssize_t n;
    while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) response.append(buf, n);
  }
  ::close(fd);
  return response;
}

TEST(MetricsHttpServerTest, RoutesByPathAndRefusesOthers) {
  auto server = MetricsHttpServer::Start(
      "127.0.0.1", 0,
      {{"/metrics", "text/plain", [] { return std::string("m 1\n"); }},
       {"/stats.json", "application/json", [] { return std::string("{}"); }}});
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const uint16_t port = (*server)->port();

  std::string r = Exchange(port, "GET /metrics HTTP/1.0\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("Content-Type: text/plain\r\n"), std::string::npos) << r;
  EXPECT_NE(r.find("Content-Length: 4\r\n"), std::string::npos) << r;
  EXPECT_EQ(r.substr(r.find("\r\n\r\n") + 4), "m 1\n");

  r = Exchange(port, "GET /stats.json?x=1 HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("Content-Type: application/json\r\n"), std::string::npos) << r;
  EXPECT_EQ(r.substr(r.find("\r\n\r\n") + 4), "{}");

  EXPECT_EQ(Exchange(port, "GET /nope HTTP/1.0\r\n\r\n").rfind("HTTP/1.0 404", 0), 0u);
  EXPECT_EQ(Exchange(port, "GET /metricsx HTTP/1.0\r\n\r\n").rfind("HTTP/1.0 404", 0), 0u);
  EXPECT_EQ(Exchange(port, "POST /metrics HTTP/1.0\r\n\r\n").rfind("HTTP/1.0 405", 0), 0u);
  EXPECT_EQ(Exchange(port, "GARBAGE\r\n\r\n").rfind("HTTP/1.0 400", 0), 0u);
}

}  // namespace
}  // namespace geofs::spoke
