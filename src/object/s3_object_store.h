// S3ObjectStore: objects in an S3 bucket (AWS or any S3-compatible server),
// over libcurl.
//
//  - Requests are signed with SigV4 by libcurl itself (CURLOPT_AWS_SIGV4);
//    the payload is sent as UNSIGNED-PAYLOAD unless sign_payload is set.
//  - At most max_concurrency requests are in flight; callers beyond that
//    wait. Each request borrows a CURL easy handle from a pool, so TCP/TLS
//    connections are reused across calls.
//  - Connection errors, timeouts, HTTP 5xx and 429 are retried up to
//    max_attempts times with exponential backoff and full jitter; other 4xx
//    replies are final. Final errors name the operation, the key and the HTTP
//    status (and S3's error code): 404 -> kNotFound, 403 -> kAccessDenied,
//    400 -> kInvalidArgument, exhausted 5xx/connection errors ->
//    kUnavailable, exhausted timeouts -> kDeadlineExceeded.
//  - List returns keys in the order the server sends them: byte order on
//    AWS; some emulators (s3rver) differ for keys of mixed depth.
//
// Thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "object/object_store.h"

namespace geofs::object {

struct S3Options {
  enum class Addressing { kPath, kVirtualHost };

  std::string bucket;
  // Prepended to every key ("" or ending in '/', e.g. "geofs/").
  std::string prefix;
  // "http://host:port" or "https://host"; empty: AWS in `region`.
  std::string endpoint;
  std::string region = "us-east-1";
  // kPath: http://host/bucket/key; kVirtualHost: http://bucket.host/key.
  Addressing addressing = Addressing::kVirtualHost;
  // Empty access key: requests go unsigned (public buckets).
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;
  // Sign the SHA-256 of each upload instead of UNSIGNED-PAYLOAD (costs one
  // hash pass over the bytes; protects them on plain-http endpoints).
  bool sign_payload = false;

  int max_concurrency = 16;
  // Tries per request, the first included.
  int max_attempts = 5;
  std::chrono::milliseconds initial_backoff{100};
  std::chrono::milliseconds max_backoff{5000};
  std::chrono::milliseconds connect_timeout{5000};
  // Whole-request limit, transfer included.
  std::chrono::milliseconds request_timeout{60000};
  // "HOST:PORT" to connect to instead of the URL's host, keeping the URL's
  // Host header (libcurl CONNECT_TO). Lets virtual-host addressing reach a
  // local server in tests, or a private endpoint.
  std::string connect_to;
};

// Parses "s3://bucket[/prefix][?endpoint=URL&region=R&addressing=path|virtual]"
// (query values may be percent-encoded; a prefix gets a trailing '/').
// Unknown parameters are kInvalidArgument. The region is left empty unless
// the URL names one, and credentials are left empty: see ResolveS3Environment.
Result<S3Options> ParseS3Url(std::string_view url);

// Fills what a URL does not say from the environment: an empty region from
// AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1; empty credentials from
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN.
void ResolveS3Environment(S3Options* options);

class S3ObjectStore : public ObjectStore {
 public:
  // kInvalidArgument for unusable options (no bucket, bad endpoint, limits
  // below 1).
  static Result<std::unique_ptr<S3ObjectStore>> Create(S3Options options);
  ~S3ObjectStore() override;

  Status Put(std::string_view key, std::span<const uint8_t> data) override;
  Result<Buffer> Get(std::string_view key) override;
  Result<ObjectInfo> Head(std::string_view key) override;
  Status Delete(std::string_view key) override;
  Result<ObjectListing> List(std::string_view prefix, std::string_view page_token,
                             size_t max_keys) override;
  std::string Describe() const override;

 private:
  class Impl;
  explicit S3ObjectStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace geofs::object
