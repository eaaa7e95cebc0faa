#include "object/s3_object_store.h"

#include <curl/curl.h>
#include <openssl/evp.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "common/logging.h"
#include "object/s3_xml.h"

namespace geofs::object {
namespace {

constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";

void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

bool IsUnreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.' || c == '~';
}

// Percent-encodes the way SigV4 canonicalises (RFC 3986 unreserved kept,
// uppercase hex), so the URL we send is already canonical: libcurl 7.88 signs
// the path and query exactly as given.
std::string UriEncode(std::string_view s, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (IsUnreserved(c) || (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

Result<std::string> PercentDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    auto hex = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    int hi = i + 2 < s.size() ? hex(s[i + 1]) : -1;
    int lo = i + 2 < s.size() ? hex(s[i + 2]) : -1;
    if (hi < 0 || lo < 0) {
      return Status::InvalidArgument("bad percent-encoding in '" + std::string(s) + "'");
    }
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

std::string Sha256Hex(std::span<const uint8_t> data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 15]);
  }
  return out;
}

bool IsRetryableCurlError(CURLcode cc) {
  switch (cc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_WEIRD_SERVER_REPLY:
      return true;
    default:
      return false;
  }
}

bool IsRetryableHttpStatus(long status) { return status >= 500 || status == 429; }

// A counting semaphore whose size is chosen at run time.
class Semaphore {
 public:
  explicit Semaphore(int count) : count_(count) {}
  void Acquire() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return count_ > 0; });
    --count_;
  }
  void Release() {
    {
      std::lock_guard lock(mu_);
      ++count_;
    }
    cv_.notify_one();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int count_;  // GUARDED_BY(mu_)
};

struct CurlSlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
using CurlSlist = std::unique_ptr<curl_slist, CurlSlistDeleter>;

CurlSlist SlistOf(const std::vector<std::string>& lines) {
  curl_slist* list = nullptr;
  for (const std::string& line : lines) list = curl_slist_append(list, line.c_str());
  return CurlSlist(list);
}

struct UploadSource {
  std::span<const uint8_t> data;
  size_t pos = 0;
};

size_t ReadUpload(char* buffer, size_t size, size_t nitems, void* userdata) {
  auto* src = static_cast<UploadSource*>(userdata);
  size_t n = std::min(size * nitems, src->data.size() - src->pos);
  std::memcpy(buffer, src->data.data() + src->pos, n);
  src->pos += n;
  return n;
}

int SeekUpload(void* userdata, curl_off_t offset, int origin) {
  auto* src = static_cast<UploadSource*>(userdata);
  if (origin != SEEK_SET || offset < 0 || static_cast<size_t>(offset) > src->data.size()) {
    return CURL_SEEKFUNC_FAIL;
  }
  src->pos = static_cast<size_t>(offset);
  return CURL_SEEKFUNC_OK;
}

struct Download {
  CURL* handle;
  std::shared_ptr<std::vector<uint8_t>> body = std::make_shared<std::vector<uint8_t>>();
  bool sized = false;
};

size_t WriteDownload(char* data, size_t size, size_t nmemb, void* userdata) {
  auto* dl = static_cast<Download*>(userdata);
  if (!dl->sized) {
    // Reserve once from Content-Length so a large object is not regrown.
    curl_off_t length = -1;
    curl_easy_getinfo(dl->handle, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
    if (length > 0) dl->body->reserve(static_cast<size_t>(length));
    dl->sized = true;
  }
  dl->body->insert(dl->body->end(), data, data + size * nmemb);
  return size * nmemb;
}

struct HttpRequest {
  const char* method;  // GET, PUT, HEAD or DELETE
  std::string url;
  std::span<const uint8_t> body;  // PUT only
  std::string what;               // "get s3://bucket/key", for messages
};

struct HttpReply {
  long status = 0;
  std::shared_ptr<std::vector<uint8_t>> body;
  int64_t content_length = -1;  // from HEAD
  int64_t filetime = -1;        // Last-Modified of HEAD, seconds since the epoch
};

std::string_view BodyText(const HttpReply& reply) {
  if (!reply.body) return {};
  return {reinterpret_cast<const char*>(reply.body->data()), reply.body->size()};
}

// The final error for a reply that is not a success.
Status HttpError(const HttpReply& reply, std::string_view what, int attempts) {
  S3Error err = ParseS3Error(BodyText(reply));
  std::string msg(what);
  msg += ": HTTP " + std::to_string(reply.status);
  if (!err.code.empty()) msg += " " + err.code;
  if (!err.message.empty()) msg += ": " + err.message;
  if (attempts > 1) msg += " (after " + std::to_string(attempts) + " attempts)";
  if (err.code == "NoSuchBucket") return Status::IoError(msg);
  switch (reply.status) {
    case 404:
      return Status::NotFound(msg);
    case 403:
      return Status::AccessDenied(msg);
    case 400:
      return Status::InvalidArgument(msg);
    default:
      if (IsRetryableHttpStatus(reply.status)) return Status::Unavailable(msg);
      return Status::IoError(msg);
  }
}

}  // namespace

class S3ObjectStore::Impl {
 public:
  Impl(S3Options options, std::string scheme, std::string host)
      : options_(std::move(options)),
        slots_(options_.max_concurrency),
        log_(GetLogger("object.s3")) {
    if (options_.addressing == S3Options::Addressing::kPath) {
      bucket_url_ = scheme + "://" + host + "/" + UriEncode(options_.bucket, false);
      object_base_ = bucket_url_ + "/";
    } else {
      bucket_url_ = scheme + "://" + options_.bucket + "." + host + "/";
      object_base_ = bucket_url_;
    }
    sigv4_ = "aws:amz:" + options_.region + ":s3";
    describe_ = "s3://" + options_.bucket + "/" + options_.prefix;
    if (!options_.endpoint.empty()) describe_ += "?endpoint=" + options_.endpoint;
  }

  ~Impl() {
    for (CURL* h : idle_) curl_easy_cleanup(h);
  }

  std::string ObjectUrl(std::string_view key) const {
    return object_base_ + UriEncode(options_.prefix + std::string(key), true);
  }

  std::string What(std::string_view op, std::string_view key) const {
    return std::string(op) + " s3://" + options_.bucket + "/" + options_.prefix + std::string(key);
  }

  // Runs `req` with retries. Returns the reply of the last attempt unless it
  // is a retryable failure, which becomes an error Status.
  Result<HttpReply> Perform(const HttpRequest& req) {
    for (int attempt = 1;; ++attempt) {
      HttpReply reply;
      std::string curl_error;
      CURLcode cc = PerformOnce(req, &reply, &curl_error);
      bool retryable =
          cc != CURLE_OK ? IsRetryableCurlError(cc) : IsRetryableHttpStatus(reply.status);
      if (!retryable) {
        if (cc == CURLE_OK) return reply;
        return Status::IoError(req.what + ": " + curl_error);
      }
      if (attempt >= options_.max_attempts) {
        if (cc == CURLE_OK) return HttpError(reply, req.what, attempt);
        std::string msg =
            req.what + ": " + curl_error + " (after " + std::to_string(attempt) + " attempts)";
        if (cc == CURLE_OPERATION_TIMEDOUT) return Status(StatusCode::kDeadlineExceeded, msg);
        return Status::Unavailable(msg);
      }
      auto delay = Backoff(attempt);
      log_->debug("{}: attempt {} failed ({}), retrying in {} ms", req.what, attempt,
                  cc != CURLE_OK ? curl_error : "HTTP " + std::to_string(reply.status),
                  delay.count());
      std::this_thread::sleep_for(delay);
    }
  }

  const S3Options& options() const { return options_; }
  const std::string& bucket_url() const { return bucket_url_; }
  const std::string& describe() const { return describe_; }

 private:
  // Equal jitter: half the exponential delay, plus a random share of the
  // other half, so retries back off and spread out.
  std::chrono::milliseconds Backoff(int attempt) {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    int64_t cap = options_.max_backoff.count();
    int64_t delay = options_.initial_backoff.count();
    for (int i = 1; i < attempt && delay < cap; ++i) delay *= 2;
    delay = std::min(delay, cap);
    int64_t half = delay / 2;
    return std::chrono::milliseconds(half +
                                     std::uniform_int_distribution<int64_t>(0, delay - half)(rng));
  }

  CURL* AcquireHandle() {
    slots_.Acquire();
    std::lock_guard lock(pool_mu_);
    if (idle_.empty()) return curl_easy_init();
    CURL* h = idle_.back();
    idle_.pop_back();
    return h;
  }

  void ReleaseHandle(CURL* h) {
    if (h != nullptr) {
      std::lock_guard lock(pool_mu_);
      idle_.push_back(h);
    }
    slots_.Release();
  }

  CURLcode PerformOnce(const HttpRequest& req, HttpReply* reply, std::string* error) {
    CURL* h = AcquireHandle();
    if (h == nullptr) {
      ReleaseHandle(nullptr);
      *error = "curl_easy_init failed";
      return CURLE_FAILED_INIT;
    }
    char error_buffer[CURL_ERROR_SIZE] = {};
    std::string method(req.method);
    bool is_put = method == "PUT";
    bool is_head = method == "HEAD";

    std::vector<std::string> headers;
    if (!options_.access_key_id.empty()) {
      std::string payload(kUnsignedPayload);
      if (options_.sign_payload)
        payload = Sha256Hex(is_put ? req.body : std::span<const uint8_t>());
      headers.push_back("x-amz-content-sha256: " + payload);
      if (!options_.session_token.empty()) {
        headers.push_back("x-amz-security-token: " + options_.session_token);
      }
      curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sigv4_.c_str());
      curl_easy_setopt(h, CURLOPT_USERNAME, options_.access_key_id.c_str());
      curl_easy_setopt(h, CURLOPT_PASSWORD, options_.secret_access_key.c_str());
    }
    // No "Expect: 100-continue" round trip before uploads.
    if (is_put) headers.push_back("Expect:");
    CurlSlist header_list = SlistOf(headers);
    CurlSlist connect_to;
    if (!options_.connect_to.empty()) {
      connect_to = SlistOf({"::" + options_.connect_to});
      curl_easy_setopt(h, CURLOPT_CONNECT_TO, connect_to.get());
    }

    curl_easy_setopt(h, CURLOPT_URL, req.url.c_str());
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_buffer);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(options_.connect_timeout.count()));
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.request_timeout.count()));
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, header_list.get());
    curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 256L * 1024);

    UploadSource upload{req.body};
    if (is_put) {
      curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, 1024L * 1024);
      curl_easy_setopt(h, CURLOPT_READFUNCTION, ReadUpload);
      curl_easy_setopt(h, CURLOPT_READDATA, &upload);
      curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, SeekUpload);
      curl_easy_setopt(h, CURLOPT_SEEKDATA, &upload);
      curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
    } else if (is_head) {
      curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
      curl_easy_setopt(h, CURLOPT_FILETIME, 1L);
    } else if (method != "GET") {
      curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req.method);
    }
    Download download{h};
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, WriteDownload);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &download);

    CURLcode cc = curl_easy_perform(h);
    if (cc == CURLE_OK) {
      curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &reply->status);
      if (is_head) {
        curl_off_t length = -1;
        curl_off_t filetime = -1;
        curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
        curl_easy_getinfo(h, CURLINFO_FILETIME_T, &filetime);
        reply->content_length = length;
        reply->filetime = filetime;
      }
      reply->body = std::move(download.body);
    } else {
      *error = error_buffer[0] != '\0' ? error_buffer : curl_easy_strerror(cc);
    }
    // Drops the options that point into this frame; reset keeps the handle's
    // live connections and its DNS and TLS session caches for the next call.
    curl_easy_reset(h);
    ReleaseHandle(h);
    return cc;
  }

  const S3Options options_;
  std::string bucket_url_;   // for ListObjectsV2
  std::string object_base_;  // + encoded key
  std::string sigv4_;
  std::string describe_;
  Semaphore slots_;
  std::shared_ptr<spdlog::logger> log_;
  std::mutex pool_mu_;
  std::vector<CURL*> idle_;  // GUARDED_BY(pool_mu_)
};

Result<S3Options> ParseS3Url(std::string_view url) {
  constexpr std::string_view kScheme = "s3://";
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument("object store URL '" + std::string(url) +
                                   "': " + std::string(why));
  };
  if (!url.starts_with(kScheme)) return bad("not an s3:// URL");
  std::string_view rest = url.substr(kScheme.size());
  std::string_view query;
  if (size_t q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  S3Options options;
  options.region.clear();
  size_t slash = rest.find('/');
  options.bucket = std::string(rest.substr(0, slash));
  if (options.bucket.empty()) return bad("no bucket");
  for (char c : options.bucket) {
    if (!IsUnreserved(static_cast<unsigned char>(c)) || c == '~') return bad("bad bucket name");
  }
  if (slash != std::string_view::npos) {
    GEOFS_ASSIGN_OR_RETURN(options.prefix, PercentDecode(rest.substr(slash + 1)));
    if (!options.prefix.empty() && options.prefix.back() != '/') options.prefix += '/';
    if (options.prefix.starts_with('/') || options.prefix.find("//") != std::string::npos) {
      return bad("empty component in the prefix");
    }
  }
  bool addressing_set = false;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view param = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (param.empty()) continue;
    size_t eq = param.find('=');
    if (eq == std::string_view::npos) return bad("parameter without a value");
    std::string_view name = param.substr(0, eq);
    GEOFS_ASSIGN_OR_RETURN(std::string value, PercentDecode(param.substr(eq + 1)));
    if (name == "endpoint") {
      options.endpoint = value;
    } else if (name == "region") {
      if (value.empty()) return bad("empty region");
      options.region = value;
    } else if (name == "addressing") {
      if (value == "path") {
        options.addressing = S3Options::Addressing::kPath;
      } else if (value == "virtual") {
        options.addressing = S3Options::Addressing::kVirtualHost;
      } else {
        return bad("addressing must be path or virtual");
      }
      addressing_set = true;
    } else {
      return bad("unknown parameter '" + std::string(name) + "'");
    }
  }
  if (!options.endpoint.empty() && !addressing_set) {
    options.addressing = S3Options::Addressing::kPath;
  }
  return options;
}

void ResolveS3Environment(S3Options* options) {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  if (options->region.empty()) options->region = env("AWS_REGION");
  if (options->region.empty()) options->region = env("AWS_DEFAULT_REGION");
  if (options->region.empty()) options->region = "us-east-1";
  if (options->access_key_id.empty()) {
    options->access_key_id = env("AWS_ACCESS_KEY_ID");
    options->secret_access_key = env("AWS_SECRET_ACCESS_KEY");
    options->session_token = env("AWS_SESSION_TOKEN");
  }
}

Result<std::unique_ptr<S3ObjectStore>> S3ObjectStore::Create(S3Options options) {
  auto bad = [](std::string_view why) {
    return Status::InvalidArgument("s3 object store: " + std::string(why));
  };
  if (options.bucket.empty()) return bad("no bucket");
  if (options.region.empty()) return bad("no region");
  if (options.max_concurrency < 1 || options.max_attempts < 1) {
    return bad("max_concurrency and max_attempts must be at least 1");
  }
  if (!options.prefix.empty() && options.prefix.back() != '/') options.prefix += '/';
  std::string scheme = "https";
  std::string host = "s3." + options.region + ".amazonaws.com";
  if (!options.endpoint.empty()) {
    std::string_view ep = options.endpoint;
    size_t sep = ep.find("://");
    if (sep == std::string_view::npos)
      return bad("endpoint '" + options.endpoint + "' has no scheme");
    scheme = std::string(ep.substr(0, sep));
    if (scheme != "http" && scheme != "https") {
      return bad("endpoint scheme must be http or https: " + options.endpoint);
    }
    std::string_view authority = ep.substr(sep + 3);
    if (authority.ends_with('/')) authority.remove_suffix(1);
    if (authority.empty() || authority.find('/') != std::string_view::npos) {
      return bad("endpoint must be scheme://host[:port]: " + options.endpoint);
    }
    host = std::string(authority);
  }
  InitCurlOnce();
  auto impl = std::make_unique<Impl>(std::move(options), std::move(scheme), std::move(host));
  return std::unique_ptr<S3ObjectStore>(new S3ObjectStore(std::move(impl)));
}

S3ObjectStore::S3ObjectStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
S3ObjectStore::~S3ObjectStore() = default;

std::string S3ObjectStore::Describe() const { return impl_->describe(); }

Status S3ObjectStore::Put(std::string_view key, std::span<const uint8_t> data) {
  GEOFS_RETURN_IF_ERROR(ValidateObjectKey(key));
  HttpRequest req{"PUT", impl_->ObjectUrl(key), data, impl_->What("put", key)};
  GEOFS_ASSIGN_OR_RETURN(HttpReply reply, impl_->Perform(req));
  if (reply.status != 200) return HttpError(reply, req.what, 1);
  return Status::Ok();
}

Result<Buffer> S3ObjectStore::Get(std::string_view key) {
  GEOFS_RETURN_IF_ERROR(ValidateObjectKey(key));
  HttpRequest req{"GET", impl_->ObjectUrl(key), {}, impl_->What("get", key)};
  GEOFS_ASSIGN_OR_RETURN(HttpReply reply, impl_->Perform(req));
  if (reply.status != 200) return HttpError(reply, req.what, 1);
  const uint8_t* data = reply.body->data();
  size_t size = reply.body->size();
  return Buffer(std::shared_ptr<const void>(std::move(reply.body)), data, size);
}

Result<ObjectInfo> S3ObjectStore::Head(std::string_view key) {
  GEOFS_RETURN_IF_ERROR(ValidateObjectKey(key));
  HttpRequest req{"HEAD", impl_->ObjectUrl(key), {}, impl_->What("head", key)};
  GEOFS_ASSIGN_OR_RETURN(HttpReply reply, impl_->Perform(req));
  if (reply.status != 200) return HttpError(reply, req.what, 1);
  if (reply.content_length < 0) return Status::IoError(req.what + ": reply has no Content-Length");
  ObjectInfo info{std::string(key), static_cast<uint64_t>(reply.content_length), {}};
  if (reply.filetime >= 0) info.modified.sec = reply.filetime;
  return info;
}

Status S3ObjectStore::Delete(std::string_view key) {
  GEOFS_RETURN_IF_ERROR(ValidateObjectKey(key));
  HttpRequest req{"DELETE", impl_->ObjectUrl(key), {}, impl_->What("delete", key)};
  GEOFS_ASSIGN_OR_RETURN(HttpReply reply, impl_->Perform(req));
  // S3 answers 204 whether or not the key existed; some servers say 404.
  if (reply.status == 204 || reply.status == 200 || reply.status == 404) {
    S3Error err = ParseS3Error(BodyText(reply));
    if (err.code != "NoSuchBucket") return Status::Ok();
  }
  return HttpError(reply, req.what, 1);
}

Result<ObjectListing> S3ObjectStore::List(std::string_view prefix, std::string_view page_token,
                                          size_t max_keys) {
  if (max_keys == 0 || max_keys > kMaxListPage) {
    return Status::InvalidArgument("list " + std::string(prefix) + ": max_keys out of range");
  }
  const std::string& store_prefix = impl_->options().prefix;
  // Parameters in byte order, encoded: the canonical query string SigV4 wants.
  std::string url = impl_->bucket_url() + "?";
  if (!page_token.empty()) url += "continuation-token=" + UriEncode(page_token, false) + "&";
  url += "list-type=2&max-keys=" + std::to_string(max_keys);
  url += "&prefix=" + UriEncode(store_prefix + std::string(prefix), false);
  HttpRequest req{"GET", url, {}, impl_->What("list", prefix)};
  GEOFS_ASSIGN_OR_RETURN(HttpReply reply, impl_->Perform(req));
  if (reply.status != 200) return HttpError(reply, req.what, 1);
  auto page = ParseListObjectsV2(BodyText(reply));
  if (!page.ok()) return Status::IoError(req.what + ": " + std::string(page.status().message()));
  ObjectListing out;
  for (ObjectInfo& info : page->objects) {
    if (!info.key.starts_with(store_prefix)) {
      return Status::IoError(req.what + ": reply lists key '" + info.key + "' outside the prefix");
    }
    info.key.erase(0, store_prefix.size());
    out.objects.push_back(std::move(info));
  }
  if (page->truncated) out.next_page_token = std::move(page->next_continuation_token);
  return out;
}

}  // namespace geofs::object
