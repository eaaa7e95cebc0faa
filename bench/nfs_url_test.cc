#include "nfs_url.h"

#include <gtest/gtest.h>

namespace geofs::bench {
namespace {

TEST(NfsUrlTest, ParsesExportPortsAndCredentials) {
  auto url = ParseNfsUrl(
      "nfs://127.0.0.1/srv/data?version=3&nfsport=2050&mountport=2051&autoreconnect=0&uid=7&gid=8");
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  EXPECT_EQ(url->host, "127.0.0.1");
  EXPECT_EQ(url->export_path, "/srv/data");
  EXPECT_EQ(url->nfs_port, 2050);
  EXPECT_EQ(url->mount_port, 2051);
  EXPECT_EQ(url->uid, 7);
  EXPECT_EQ(url->gid, 8);
}

TEST(NfsUrlTest, RootExportAndDefaultCredentials) {
  auto url = ParseNfsUrl("nfs://localhost/?nfsport=1&mountport=1");
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  EXPECT_EQ(url->export_path, "/");
  EXPECT_EQ(url->uid, -1);
  EXPECT_EQ(url->gid, -1);
}

TEST(NfsUrlTest, RejectsWhatItCannotHonour) {
  for (const char* bad : {
           "http://127.0.0.1/?nfsport=1&mountport=2",       // scheme
           "nfs://127.0.0.1?nfsport=1&mountport=2",         // no export path
           "nfs:///x?nfsport=1&mountport=2",                // no host
           "nfs://127.0.0.1:2049/x?nfsport=1&mountport=2",  // port in authority
           "nfs://127.0.0.1/x?nfsport=1",                   // no mount port
           "nfs://127.0.0.1/x?mountport=1",                 // no nfs port
           "nfs://127.0.0.1/x?nfsport=70000&mountport=1",   // out of range
           "nfs://127.0.0.1/x?nfsport=12ab&mountport=1",    // not a number
           "nfs://127.0.0.1/x?version=4&nfsport=1&mountport=1",
           "nfs://127.0.0.1/x?nfsport=1&mountport=1&bogus=1",
           "nfs://127.0.0.1/x?nfsport=1&mountport=1&uid",
       }) {
    EXPECT_FALSE(ParseNfsUrl(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace geofs::bench
