#include "cli/spoke_client.h"

#include <curl/curl.h>

#include <memory>
#include <mutex>

namespace geofs::cli {
namespace {

// Far above any real stats document; a bound on what a wrong server sends.
constexpr size_t kMaxReplyBytes = 16 << 20;

size_t Append(char* data, size_t size, size_t count, void* user) {
  auto* body = static_cast<std::string*>(user);
  const size_t n = size * count;
  if (body->size() + n > kMaxReplyBytes) return 0;  // curl then fails the transfer
  body->append(data, n);
  return n;
}

}  // namespace

Result<std::vector<spoke::SpokeCounters>> FetchSpokeCounters(const std::string& address,
                                                             std::chrono::milliseconds timeout) {
  static std::once_flag init;
  std::call_once(init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return Status::Internal("curl_easy_init failed");

  const std::string url = "http://" + address + "/stats.json";
  std::string body;
  char error[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_PROTOCOLS_STR, "http");
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, error);
  const CURLcode rc = curl_easy_perform(curl.get());
  if (rc != CURLE_OK) {
    return Status::Unavailable("no spoke stats at " + address + ": " +
                               (error[0] ? error : curl_easy_strerror(rc)));
  }
  long code = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &code);
  if (code != 200) {
    return Status::Unavailable("no spoke stats at " + address + ": " + url + " answered HTTP " +
                               std::to_string(code));
  }
  auto counters = spoke::ParseJson(body);
  if (!counters.ok()) {
    return Status::Corruption("spoke " + address + ": " + std::string(counters.status().message()));
  }
  return counters;
}

}  // namespace geofs::cli
