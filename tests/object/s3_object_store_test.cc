// The S3 client's own behaviour: URL parsing, XML replies, retries, timeouts,
// signing, addressing, concurrency bounds (against a scripted fake server),
// and the parts only a real S3 server shows (against s3rver).
#include "object/s3_object_store.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "object/fake_http_server.h"
#include "object/object_store_test_util.h"
#include "object/s3_xml.h"
#include "object/s3rver_process.h"

namespace geofs::object {
namespace {

using namespace std::chrono_literals;
using objtest::Bytes;
using objtest::FakeHttpServer;
using objtest::FakeRequest;
using objtest::FakeResponse;

// ---------------------------------------------------------------- URLs

TEST(S3UrlTest, BucketOnlyMeansAwsWithVirtualHosts) {
  auto o = ParseS3Url("s3://my-bucket");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->bucket, "my-bucket");
  EXPECT_EQ(o->prefix, "");
  EXPECT_EQ(o->endpoint, "");
  EXPECT_EQ(o->region, "");
  EXPECT_EQ(o->addressing, S3Options::Addressing::kVirtualHost);
}

TEST(S3UrlTest, PrefixEndpointRegionAndAddressing) {
  auto o = ParseS3Url("s3://b/some/prefix?endpoint=http://127.0.0.1:9000&region=eu-west-1");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->bucket, "b");
  EXPECT_EQ(o->prefix, "some/prefix/");
  EXPECT_EQ(o->endpoint, "http://127.0.0.1:9000");
  EXPECT_EQ(o->region, "eu-west-1");
  EXPECT_EQ(o->addressing, S3Options::Addressing::kPath);  // the default with an endpoint

  auto v = ParseS3Url("s3://b/p/?endpoint=http%3A%2F%2Fs3.local%3A9000&addressing=virtual");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->prefix, "p/");
  EXPECT_EQ(v->endpoint, "http://s3.local:9000");
  EXPECT_EQ(v->addressing, S3Options::Addressing::kVirtualHost);

  auto p = ParseS3Url("s3://b?addressing=path");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->addressing, S3Options::Addressing::kPath);
}

TEST(S3UrlTest, RejectsMalformedUrls) {
  for (const char* url :
       {"s3://", "s3:///x", "s3://b?bogus=1", "s3://b?addressing=sideways", "s3://b//x",
        "s3://b?region=", "s3://b?endpoint", "http://b", "s3://b/%zz", "s3://bad bucket"}) {
    SCOPED_TRACE(url);
    auto o = ParseS3Url(url);
    ASSERT_FALSE(o.ok());
    EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(S3UrlTest, EnvironmentSuppliesRegionAndCredentials) {
  ::setenv("AWS_REGION", "ap-south-1", 1);
  ::setenv("AWS_DEFAULT_REGION", "ignored-1", 1);
  ::setenv("AWS_ACCESS_KEY_ID", "AKID", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "SECRET", 1);
  ::setenv("AWS_SESSION_TOKEN", "TOKEN", 1);
  S3Options o = *ParseS3Url("s3://b");
  ResolveS3Environment(&o);
  EXPECT_EQ(o.region, "ap-south-1");
  EXPECT_EQ(o.access_key_id, "AKID");
  EXPECT_EQ(o.secret_access_key, "SECRET");
  EXPECT_EQ(o.session_token, "TOKEN");

  S3Options named = *ParseS3Url("s3://b?region=us-west-2");
  ResolveS3Environment(&named);
  EXPECT_EQ(named.region, "us-west-2");

  ::unsetenv("AWS_REGION");
  S3Options fallback = *ParseS3Url("s3://b");
  ResolveS3Environment(&fallback);
  EXPECT_EQ(fallback.region, "ignored-1");
  ::unsetenv("AWS_DEFAULT_REGION");
  S3Options dflt = *ParseS3Url("s3://b");
  ResolveS3Environment(&dflt);
  EXPECT_EQ(dflt.region, "us-east-1");
  for (const char* v : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"}) {
    ::unsetenv(v);
  }
}

TEST(OpenObjectStoreTest, DispatchesOnTheScheme) {
  objtest::TempDir dir;
  auto local = OpenObjectStore("file://" + dir.path() + "/objs");
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  EXPECT_EQ((*local)->Describe(), "file://" + dir.path() + "/objs");
  auto mem = OpenObjectStore("memory:");
  ASSERT_TRUE(mem.ok());
  EXPECT_EQ((*mem)->Describe(), "memory:");
  auto s3 = OpenObjectStore("s3://bucket/pre?endpoint=http://127.0.0.1:1");
  ASSERT_TRUE(s3.ok()) << s3.status().ToString();
  EXPECT_EQ((*s3)->Describe(), "s3://bucket/pre/?endpoint=http://127.0.0.1:1");
  for (const char* url : {"file://relative/path", "ftp://x", "", "s3://b?endpoint=ftp://x",
                          "s3://b?endpoint=http://h/with/path"}) {
    SCOPED_TRACE(url);
    auto bad = OpenObjectStore(url);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  }
}

// ---------------------------------------------------------------- XML

TEST(S3XmlTest, ParsesAListObjectsV2Page) {
  constexpr std::string_view kDoc = R"(<?xml version="1.0" encoding="UTF-8"?>
<!-- a comment -->
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>bucket</Name><Prefix>p/</Prefix><KeyCount>3</KeyCount>
  <IsTruncated>true</IsTruncated>
  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
  <Contents>
    <Key>p/a&amp;b&lt;c&gt;&quot;&apos;</Key>
    <LastModified>2024-02-29T12:34:56.789Z</LastModified>
    <ETag>&quot;abc&quot;</ETag><Size>42</Size><StorageClass>STANDARD</StorageClass>
  </Contents>
  <Contents><Key><![CDATA[p/<cdata>&]]></Key><Size>0</Size></Contents>
  <s3:Contents><s3:Key>p/&#233;&#x20AC; x</s3:Key><s3:Size>18446744073709551615</s3:Size></s3:Contents>
</ListBucketResult>)";
  auto page = ParseListObjectsV2(kDoc);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->objects.size(), 3u);
  EXPECT_EQ(page->objects[0].key, "p/a&b<c>\"'");
  EXPECT_EQ(page->objects[0].size, 42u);
  EXPECT_EQ(page->objects[0].modified.sec, 1709210096);
  EXPECT_EQ(page->objects[0].modified.nsec, 789000000u);
  EXPECT_EQ(page->objects[1].key, "p/<cdata>&");
  EXPECT_EQ(page->objects[2].key, "p/\xc3\xa9\xe2\x82\xac x");
  EXPECT_EQ(page->objects[2].size, UINT64_MAX);
  EXPECT_TRUE(page->truncated);
  EXPECT_EQ(page->next_continuation_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");

  auto last = ParseListObjectsV2(
      "<ListBucketResult><IsTruncated>false</IsTruncated>"
      "</ListBucketResult>");
  ASSERT_TRUE(last.ok());
  EXPECT_TRUE(last->objects.empty());
  EXPECT_FALSE(last->truncated);
}

TEST(S3XmlTest, RejectsMalformedDocuments) {
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "<a>";
  for (int i = 0; i < 100; ++i) deep += "</a>";
  for (std::string doc :
       {std::string("<a><b></a></b>"), std::string("<a>"), std::string(""),
        std::string("<!DOCTYPE a [<!ENTITY x \"y\">]><a/>"), std::string("<a>&bogus;</a>"),
        std::string("<a>&#0;</a>"), std::string("<a>&#xD800;</a>"), std::string("<a x=1/>"),
        std::string("<a/><b/>"), std::string("<a><![CDATA[x</a>"), deep}) {
    SCOPED_TRACE(doc.substr(0, 60));
    auto parsed = ParseXml(doc);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  }
  auto shallow = ParseXml(deep.substr(0, 3 * 60) + deep.substr(deep.size() - 4 * 60));
  EXPECT_TRUE(shallow.ok()) << shallow.status().ToString();
}

TEST(S3XmlTest, RejectsInconsistentListPages) {
  for (const char* doc :
       {"<Error><Code>x</Code></Error>",
        "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
        "<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>",
        "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>k</Key></Contents>"
        "</ListBucketResult>",
        "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Size>1</Size></Contents>"
        "</ListBucketResult>",
        "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>k</Key><Size>-1</Size>"
        "</Contents></ListBucketResult>"}) {
    SCOPED_TRACE(doc);
    EXPECT_FALSE(ParseListObjectsV2(doc).ok());
  }
}

TEST(S3XmlTest, ParsesErrorsAndTimestamps) {
  S3Error err = ParseS3Error(
      "<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>The key &quot;k&quot; "
      "does not exist.</Message><Key>k</Key></Error>");
  EXPECT_EQ(err.code, "NoSuchKey");
  EXPECT_EQ(err.message, "The key \"k\" does not exist.");
  EXPECT_TRUE(ParseS3Error("<html>proxy error</html>").code.empty());
  EXPECT_TRUE(ParseS3Error("not xml").code.empty());

  auto epoch = ParseIso8601("1970-01-01T00:00:00Z");
  ASSERT_TRUE(epoch.ok());
  EXPECT_EQ(epoch->sec, 0);
  auto t = ParseIso8601("2024-02-29T12:34:56.5Z");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->sec, 1709210096);
  EXPECT_EQ(t->nsec, 500000000u);
  for (const char* bad :
       {"2023-02-29T00:00:00Z", "2024-13-01T00:00:00Z", "2024-01-01 00:00:00Z",
        "2024-01-01T00:00:00", "2024-01-01T25:00:00Z", "yesterday", "2024-01-01T00:00:00.Z"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(ParseIso8601(bad).ok());
  }
}

// ---------------------------------------------------------------- fake server

std::string Hex(const unsigned char* data, size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(kHex[data[i] >> 4]);
    out.push_back(kHex[data[i] & 15]);
  }
  return out;
}

std::string Sha256Hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), md, &n, EVP_sha256(), nullptr);
  return Hex(md, n);
}

std::string HmacSha256(std::string_view key, std::string_view data) {
  unsigned char out[32];
  size_t n = 0;
  EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, key.data(), key.size(),
            reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, sizeof(out), &n);
  return std::string(reinterpret_cast<char*>(out), n);
}

bool IsCanonicalEncoding(std::string_view s, bool allow_slash) {
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = s[i];
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') continue;
    if (c == '/' && allow_slash) continue;
    if (c == '%' && i + 2 < s.size() && std::isxdigit(s[i + 1]) && std::isxdigit(s[i + 2]) &&
        !std::islower(s[i + 1]) && !std::islower(s[i + 2])) {
      i += 2;
      continue;
    }
    return false;
  }
  return true;
}

// Recomputes the SigV4 signature of a received request from the AWS
// specification, independently of libcurl: proves that what we send is in
// canonical form (sorted, encoded query; encoded path), that the headers S3
// needs are signed, and that the signature matches.
void ExpectValidSigV4(const FakeRequest& req, std::string_view access_key, std::string_view secret,
                      std::string_view region) {
  auto header = [&](const std::string& name) {
    auto it = req.headers.find(name);
    return it == req.headers.end() ? std::string() : it->second;
  };
  std::string auth = header("authorization");
  ASSERT_TRUE(auth.starts_with("AWS4-HMAC-SHA256 ")) << auth;
  auto field = [&](std::string_view name) {
    size_t pos = auth.find(std::string(name) + "=");
    EXPECT_NE(pos, std::string::npos) << name;
    size_t start = pos + name.size() + 1;
    size_t end = auth.find(',', start);
    return auth.substr(start, end == std::string::npos ? end : end - start);
  };
  std::string credential = field("Credential");
  std::string signed_headers = field("SignedHeaders");
  std::string signature = field("Signature");
  std::string amz_date = header("x-amz-date");
  ASSERT_EQ(amz_date.size(), 16u);
  std::string date = amz_date.substr(0, 8);
  std::string scope = date + "/" + std::string(region) + "/s3/aws4_request";
  EXPECT_EQ(credential, std::string(access_key) + "/" + scope);
  for (const char* needed : {"host", "x-amz-content-sha256", "x-amz-date"}) {
    EXPECT_NE((";" + signed_headers + ";").find(std::string(";") + needed + ";"), std::string::npos)
        << needed << " not signed: " << signed_headers;
  }

  std::string path = req.target.substr(0, req.target.find('?'));
  std::string query =
      req.target.find('?') == std::string::npos ? "" : req.target.substr(req.target.find('?') + 1);
  EXPECT_TRUE(IsCanonicalEncoding(path, true)) << path;
  std::vector<std::string> params;
  for (size_t start = 0; !query.empty() && start <= query.size();) {
    size_t amp = query.find('&', start);
    std::string param = query.substr(start, amp == std::string::npos ? amp : amp - start);
    EXPECT_NE(param.find('='), std::string::npos) << param;
    EXPECT_TRUE(IsCanonicalEncoding(param.substr(0, param.find('=')), false)) << param;
    EXPECT_TRUE(IsCanonicalEncoding(param.substr(param.find('=') + 1), false)) << param;
    params.push_back(param);
    if (amp == std::string::npos) break;
    start = amp + 1;
  }
  EXPECT_TRUE(std::is_sorted(params.begin(), params.end())) << query;

  std::string canonical_headers;
  for (size_t start = 0; start <= signed_headers.size();) {
    size_t semi = signed_headers.find(';', start);
    std::string name =
        signed_headers.substr(start, semi == std::string::npos ? semi : semi - start);
    canonical_headers += name + ":" + header(name) + "\n";
    if (semi == std::string::npos) break;
    start = semi + 1;
  }
  std::string canonical_request = req.method + "\n" + path + "\n" + query + "\n" +
                                  canonical_headers + "\n" + signed_headers + "\n" +
                                  header("x-amz-content-sha256");
  std::string to_sign =
      "AWS4-HMAC-SHA256\n" + amz_date + "\n" + scope + "\n" + Sha256Hex(canonical_request);
  std::string key = HmacSha256("AWS4" + std::string(secret), date);
  key = HmacSha256(key, region);
  key = HmacSha256(key, "s3");
  key = HmacSha256(key, "aws4_request");
  std::string expected = HmacSha256(key, to_sign);
  EXPECT_EQ(signature,
            Hex(reinterpret_cast<const unsigned char*>(expected.data()), expected.size()));
}

class S3FakeServerTest : public ::testing::Test {
 protected:
  S3Options Options() {
    S3Options o;
    o.bucket = "bkt";
    o.prefix = "pre/";
    o.endpoint = server_.endpoint();
    o.addressing = S3Options::Addressing::kPath;
    o.region = "us-west-2";
    o.access_key_id = "AKIDEXAMPLE";
    o.secret_access_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
    o.initial_backoff = 5ms;
    o.max_backoff = 20ms;
    o.max_attempts = 4;
    return o;
  }
  std::unique_ptr<S3ObjectStore> Make(const S3Options& o) {
    auto store = S3ObjectStore::Create(o);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return std::move(store).value();
  }

  FakeHttpServer server_;
};

std::string ErrorBody(std::string_view code, std::string_view message) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>" + std::string(code) +
         "</Code><Message>" + std::string(message) + "</Message></Error>";
}

TEST_F(S3FakeServerTest, RetriesServerErrorsUntilSuccess) {
  server_.Enqueue({.status = 500, .body = ErrorBody("InternalError", "oops")});
  server_.Enqueue({.status = 503, .body = ErrorBody("SlowDown", "slow down")});
  server_.Enqueue({.status = 429});
  auto store = Make(Options());
  ASSERT_TRUE(store->Put("k", Bytes("payload")).ok());
  auto reqs = server_.requests();
  ASSERT_EQ(reqs.size(), 4u);
  for (const FakeRequest& r : reqs) {
    EXPECT_EQ(r.method, "PUT");
    EXPECT_EQ(r.target, "/bkt/pre/k");
    EXPECT_EQ(r.body, "payload");  // the body is re-sent whole on each attempt
  }
}

TEST_F(S3FakeServerTest, GivesUpAfterMaxAttemptsNamingKeyAndStatus) {
  server_.SetDefault({.status = 503, .body = ErrorBody("SlowDown", "Please reduce your rate")});
  auto store = Make(Options());
  auto got = store->Get("dir/key");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable);
  std::string msg(got.status().message());
  for (const char* part : {"get", "s3://bkt/pre/dir/key", "HTTP 503", "SlowDown",
                           "Please reduce your rate", "after 4 attempts"}) {
    EXPECT_NE(msg.find(part), std::string::npos) << part << " missing from: " << msg;
  }
  EXPECT_EQ(server_.request_count(), 4u);
}

TEST_F(S3FakeServerTest, ClientErrorsAreFinal) {
  server_.Enqueue({.status = 403, .body = ErrorBody("AccessDenied", "Access Denied")});
  server_.Enqueue({.status = 404, .body = ErrorBody("NoSuchKey", "no such key")});
  server_.Enqueue({.status = 400, .body = ErrorBody("InvalidArgument", "bad")});
  server_.Enqueue({.status = 409, .body = ErrorBody("Conflict", "conflict")});
  server_.Enqueue({.status = 404, .body = ErrorBody("NoSuchBucket", "no bucket")});
  auto store = Make(Options());
  Status put = store->Put("k", Bytes("x"));
  EXPECT_EQ(put.code(), StatusCode::kAccessDenied);
  EXPECT_NE(put.message().find("HTTP 403 AccessDenied"), std::string_view::npos) << put.ToString();
  EXPECT_EQ(store->Get("k").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store->Get("k").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Get("k").status().code(), StatusCode::kIoError);
  // A missing bucket is not a missing key.
  EXPECT_EQ(store->Get("k").status().code(), StatusCode::kIoError);
  EXPECT_EQ(server_.request_count(), 5u);
}

TEST_F(S3FakeServerTest, TimeoutsAreRetriedThenReported) {
  S3Options o = Options();
  o.request_timeout = 200ms;
  auto store = Make(o);
  server_.Enqueue({.body = "late", .delay = 2000ms});
  server_.Enqueue({.body = "on time"});
  auto got = store->Get("k");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->view(), "on time");
  EXPECT_EQ(server_.request_count(), 2u);

  server_.SetDefault({.body = "late", .delay = 2000ms});
  auto start = std::chrono::steady_clock::now();
  auto late = store->Get("k");
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.status().code(), StatusCode::kDeadlineExceeded) << late.status().ToString();
  // Four 200 ms attempts and short backoffs, not the server's 2 s delay.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms);
  EXPECT_EQ(server_.request_count(), 2u + 4u);
}

TEST_F(S3FakeServerTest, DroppedConnectionsAreRetried) {
  server_.Enqueue({.drop = true});
  server_.Enqueue({.drop = true});
  server_.Enqueue({.body = "data"});
  auto store = Make(Options());
  auto got = store->Get("k");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->view(), "data");
  EXPECT_EQ(server_.request_count(), 3u);
}

TEST_F(S3FakeServerTest, UnreachableServerIsUnavailable) {
  S3Options o = Options();
  uint16_t port;
  {
    FakeHttpServer closed;  // a port that was just released
    port = closed.port();
  }
  o.endpoint = "http://127.0.0.1:" + std::to_string(port);
  o.max_attempts = 3;
  auto store = Make(o);
  auto head = store->Head("k");
  ASSERT_FALSE(head.ok());
  EXPECT_EQ(head.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(head.status().message().find("after 3 attempts"), std::string_view::npos)
      << head.status().ToString();
  EXPECT_NE(head.status().message().find("head s3://bkt/pre/k"), std::string_view::npos);
}

TEST_F(S3FakeServerTest, ReusesOneConnectionForSequentialCalls) {
  server_.SetDefault({.body = "x"});
  auto store = Make(Options());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(store->Get("k").ok());
  EXPECT_EQ(server_.request_count(), 10u);
  EXPECT_EQ(server_.connections_accepted(), 1u);
}

TEST_F(S3FakeServerTest, BoundsConcurrentRequests) {
  server_.SetDefault({.body = "x", .delay = 50ms});
  S3Options o = Options();
  o.max_concurrency = 3;
  auto store = Make(o);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 3; ++i) {
        if (!store->Get("k").ok()) ++failures;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(server_.request_count(), 24u);
  EXPECT_EQ(server_.max_in_flight(), 3);
  EXPECT_LE(server_.connections_accepted(), 3u);
}

TEST_F(S3FakeServerTest, SignsEveryRequestWithSigV4) {
  S3Options o = Options();
  o.session_token = "session-token-value";
  auto store = Make(o);
  server_.Enqueue({.status = 200});
  server_.Enqueue({.status = 200, .body = "v"});
  server_.Enqueue({.status = 200,
                   .body = "12345",
                   .headers = {{"Last-Modified", "Thu, 29 Feb 2024 12:34:56 GMT"}}});
  server_.Enqueue({.status = 204});
  server_.Enqueue(
      {.status = 200,
       .body = "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>"});
  ASSERT_TRUE(store->Put("dir/a b+c", Bytes("body")).ok());
  ASSERT_TRUE(store->Get("dir/a b+c").ok());
  auto head = store->Head("dir/a b+c");
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_EQ(head->size, 5u);
  EXPECT_EQ(head->modified.sec, 1709210096);
  ASSERT_TRUE(store->Delete("dir/a b+c").ok());
  ASSERT_TRUE(store->List("dir/x y", "token/with+chars=", 10).ok());

  auto reqs = server_.requests();
  ASSERT_EQ(reqs.size(), 5u);
  const char* methods[] = {"PUT", "GET", "HEAD", "DELETE", "GET"};
  for (size_t i = 0; i < reqs.size(); ++i) {
    SCOPED_TRACE(reqs[i].method + " " + reqs[i].target);
    EXPECT_EQ(reqs[i].method, methods[i]);
    EXPECT_EQ(reqs[i].headers["x-amz-content-sha256"], "UNSIGNED-PAYLOAD");
    EXPECT_EQ(reqs[i].headers["x-amz-security-token"], "session-token-value");
    EXPECT_EQ(reqs[i].headers.count("expect"), 0u);
    ExpectValidSigV4(reqs[i], o.access_key_id, o.secret_access_key, o.region);
  }
  EXPECT_EQ(reqs[0].target, "/bkt/pre/dir/a%20b%2Bc");
  EXPECT_EQ(reqs[4].target,
            "/bkt?continuation-token=token%2Fwith%2Bchars%3D&list-type=2&max-keys=10&prefix=pre%"
            "2Fdir%2Fx%20y");
}

TEST_F(S3FakeServerTest, SignedPayloadCarriesTheBodyHash) {
  S3Options o = Options();
  o.sign_payload = true;
  auto store = Make(o);
  ASSERT_TRUE(store->Put("k", Bytes("hello")).ok());
  ASSERT_TRUE(store->Get("k").ok());
  auto reqs = server_.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].headers["x-amz-content-sha256"], Sha256Hex("hello"));
  EXPECT_EQ(reqs[1].headers["x-amz-content-sha256"], Sha256Hex(""));
  ExpectValidSigV4(reqs[0], o.access_key_id, o.secret_access_key, o.region);
  ExpectValidSigV4(reqs[1], o.access_key_id, o.secret_access_key, o.region);
}

TEST_F(S3FakeServerTest, NoCredentialsMeansUnsignedRequests) {
  S3Options o = Options();
  o.access_key_id.clear();
  o.secret_access_key.clear();
  auto store = Make(o);
  ASSERT_TRUE(store->Get("k").ok());
  auto reqs = server_.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].headers.count("authorization"), 0u);
}

TEST_F(S3FakeServerTest, VirtualHostAddressingPutsTheBucketInTheHost) {
  S3Options o = Options();
  o.addressing = S3Options::Addressing::kVirtualHost;
  o.endpoint = "http://s3.example.test:" + std::to_string(server_.port());
  o.connect_to = "127.0.0.1:" + std::to_string(server_.port());
  auto store = Make(o);
  ASSERT_TRUE(store->Put("k/x", Bytes("v")).ok());
  server_.Enqueue(
      {.status = 200,
       .body = "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>"});
  ASSERT_TRUE(store->List("", "", 5).ok());
  auto reqs = server_.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].headers["host"], "bkt.s3.example.test:" + std::to_string(server_.port()));
  EXPECT_EQ(reqs[0].target, "/pre/k/x");
  EXPECT_EQ(reqs[1].target, "/?list-type=2&max-keys=5&prefix=pre%2F");
  ExpectValidSigV4(reqs[0], o.access_key_id, o.secret_access_key, o.region);
  ExpectValidSigV4(reqs[1], o.access_key_id, o.secret_access_key, o.region);
}

TEST_F(S3FakeServerTest, ListFollowsContinuationTokensAndStripsThePrefix) {
  server_.Enqueue({.body = "<ListBucketResult><IsTruncated>true</IsTruncated>"
                           "<NextContinuationToken>tok 1</NextContinuationToken>"
                           "<Contents><Key>pre/a</Key><Size>1</Size></Contents>"
                           "</ListBucketResult>"});
  server_.Enqueue({.body = "<ListBucketResult><IsTruncated>false</IsTruncated>"
                           "<Contents><Key>pre/b</Key><Size>2</Size></Contents>"
                           "</ListBucketResult>"});
  auto store = Make(Options());
  std::vector<std::string> keys;
  ASSERT_TRUE(store
                  ->ForEach("",
                            [&](const ObjectInfo& info) {
                              keys.push_back(info.key);
                              return Status::Ok();
                            })
                  .ok());
  EXPECT_EQ(keys, (std::vector<std::string>{"a", "b"}));
  auto reqs = server_.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[1].target,
            "/bkt?continuation-token=tok%201&list-type=2&max-keys=1000&prefix=pre%2F");

  server_.Enqueue({.body = "<ListBucketResult><IsTruncated>false</IsTruncated>"
                           "<Contents><Key>elsewhere/c</Key><Size>2</Size></Contents>"
                           "</ListBucketResult>"});
  EXPECT_EQ(store->List("", "", 10).status().code(), StatusCode::kIoError);
  server_.Enqueue({.body = "<ListBucketResult><Contents>"});
  EXPECT_EQ(store->List("", "", 10).status().code(), StatusCode::kIoError);
}

// ---------------------------------------------------------------- s3rver

class S3rverTest : public ::testing::Test {
 protected:
  // One s3rver for the process, started by the first test that needs it. A
  // failure to start fails each test (a failing SetUpTestSuite would only
  // mark them skipped).
  void SetUp() override {
    // Destroyed at exit, which stops the server and removes its data.
    static std::unique_ptr<objtest::S3rverProcess> shared = [] {
      auto started = objtest::S3rverProcess::Start("geofs-test");
      if (!started.ok()) {
        start_error_ = started.status().ToString();
        return std::unique_ptr<objtest::S3rverProcess>();
      }
      return std::move(started).value();
    }();
    server_ = shared.get();
    ASSERT_NE(server_, nullptr) << "cannot start s3rver: " << start_error_;
  }

  S3Options Options(std::string prefix) {
    S3Options o;
    o.bucket = server_->bucket();
    o.prefix = std::move(prefix);
    o.endpoint = server_->endpoint();
    o.addressing = S3Options::Addressing::kPath;
    o.access_key_id = objtest::S3rverProcess::kAccessKey;
    o.secret_access_key = objtest::S3rverProcess::kSecretKey;
    return o;
  }

  static inline std::string start_error_;
  objtest::S3rverProcess* server_ = nullptr;
};

TEST_F(S3rverTest, VirtualHostAndPathStyleReachTheSameObjects) {
  auto path_store = S3ObjectStore::Create(Options("vh/"));
  ASSERT_TRUE(path_store.ok());
  S3Options vo = Options("vh/");
  // s3rver takes the bucket from the Host header under *.amazonaws.com.
  vo.addressing = S3Options::Addressing::kVirtualHost;
  vo.endpoint = "http://s3.amazonaws.com:" + std::to_string(server_->port());
  vo.connect_to = "127.0.0.1:" + std::to_string(server_->port());
  auto virtual_store = S3ObjectStore::Create(vo);
  ASSERT_TRUE(virtual_store.ok());

  ASSERT_TRUE((*virtual_store)->Put("obj", Bytes("via virtual host")).ok());
  auto got = (*path_store)->Get("obj");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->view(), "via virtual host");
  auto listed = (*virtual_store)->List("", "", 10);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->objects.size(), 1u);
  EXPECT_EQ(listed->objects[0].key, "obj");
}

TEST_F(S3rverTest, PrefixesIsolateStoresInOneBucket) {
  auto a = S3ObjectStore::Create(Options("iso-a/"));
  auto b = S3ObjectStore::Create(Options("iso-a-b/"));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*a)->Put("k", Bytes("a")).ok());
  ASSERT_TRUE((*b)->Put("k", Bytes("b")).ok());
  EXPECT_EQ((*a)->Get("k")->view(), "a");
  EXPECT_EQ((*b)->Get("k")->view(), "b");
  auto listed = (*a)->List("", "", 10);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->objects.size(), 1u);
  EXPECT_EQ(listed->objects[0].key, "k");
}

TEST_F(S3rverTest, OpensFromAUrlWithEnvironmentCredentials) {
  ::setenv("AWS_ACCESS_KEY_ID", objtest::S3rverProcess::kAccessKey, 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", objtest::S3rverProcess::kSecretKey, 1);
  auto store =
      OpenObjectStore("s3://" + server_->bucket() + "/from-url?endpoint=" + server_->endpoint() +
                      "&region=eu-central-1");
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE((*store)->Put("x/y", Bytes("z")).ok());
  auto direct = S3ObjectStore::Create(Options("from-url/"));
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ((*direct)->Get("x/y")->view(), "z");
}

TEST_F(S3rverTest, MissingBucketIsAnErrorNotAMissingKey) {
  S3Options o = Options("");
  o.bucket = "no-such-bucket";
  auto store = S3ObjectStore::Create(o);
  ASSERT_TRUE(store.ok());
  auto got = (*store)->Get("k");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kIoError) << got.status().ToString();
  EXPECT_NE(got.status().message().find("NoSuchBucket"), std::string_view::npos);
  EXPECT_FALSE((*store)->Put("k", Bytes("v")).ok());
}

}  // namespace
}  // namespace geofs::object
