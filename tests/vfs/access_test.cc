#include "vfs/access.h"

#include <gtest/gtest.h>

namespace geofs::vfs {
namespace {

const Credentials kRoot{0, 0, {}};
const Credentials kOwner{1000, 100, {}};
const Credentials kMember{2000, 200, {7, 100}};
const Credentials kStranger{3000, 300, {}};

Attr File(uint32_t mode, FileType type = FileType::kRegular) {
  Attr a;
  a.type = type;
  a.mode = mode;
  a.uid = kOwner.uid;
  a.gid = kOwner.gid;
  return a;
}

TEST(AccessTest, PermissionClassIsChosenOwnerFirst) {
  // The owner class applies even when group and other would grant more.
  const Attr a = File(0077);
  EXPECT_FALSE(HasPermission(a, kOwner, kMayRead));
  EXPECT_TRUE(HasPermission(a, kMember, kMayRead | kMayWrite | kMayExec));
  EXPECT_TRUE(HasPermission(a, kStranger, kMayRead | kMayWrite | kMayExec));
  const Attr b = File(0750);
  EXPECT_TRUE(HasPermission(b, kOwner, kMayRead | kMayWrite | kMayExec));
  EXPECT_TRUE(HasPermission(b, kMember, kMayRead | kMayExec));
  EXPECT_FALSE(HasPermission(b, kMember, kMayWrite));
  EXPECT_FALSE(HasPermission(b, kStranger, kMayRead));
  // Membership through the primary gid counts too.
  Credentials primary{4000, kOwner.gid, {}};
  EXPECT_TRUE(HasPermission(b, primary, kMayRead));
}

TEST(AccessTest, RootReadsAndWritesAllButExecutesOnlyWithSomeExecuteBit) {
  EXPECT_TRUE(HasPermission(File(0), kRoot, kMayRead | kMayWrite));
  EXPECT_FALSE(HasPermission(File(0644), kRoot, kMayExec));
  EXPECT_TRUE(HasPermission(File(0001), kRoot, kMayExec));
  EXPECT_TRUE(HasPermission(File(0, FileType::kDirectory), kRoot, kMayExec));
}

TEST(AccessTest, GrantedAccessMapsBitsPerObjectType) {
  const uint32_t all =
      kAccessRead | kAccessLookup | kAccessModify | kAccessExtend | kAccessDelete | kAccessExecute;
  EXPECT_EQ(GrantedAccess(File(0700), kOwner, all),
            kAccessRead | kAccessModify | kAccessExtend | kAccessExecute);
  EXPECT_EQ(GrantedAccess(File(0700, FileType::kDirectory), kOwner, all), all);
  // Write without search on a directory changes nothing in it.
  EXPECT_EQ(GrantedAccess(File(0600, FileType::kDirectory), kOwner, all), kAccessRead);
  EXPECT_EQ(GrantedAccess(File(0070, FileType::kDirectory), kMember, all), all);
  EXPECT_EQ(GrantedAccess(File(0070, FileType::kDirectory), kStranger, all), 0u);
  EXPECT_EQ(GrantedAccess(File(0777), kStranger, kAccessRead | kAccessExecute),
            kAccessRead | kAccessExecute);
}

TEST(AccessTest, DirectoryChecks) {
  const Attr dir = File(0755, FileType::kDirectory);
  EXPECT_TRUE(CheckSearch(dir, kStranger).ok());
  EXPECT_TRUE(CheckList(dir, kStranger).ok());
  EXPECT_EQ(CheckDirWrite(dir, kStranger).code(), StatusCode::kAccessDenied);
  EXPECT_TRUE(CheckDirWrite(dir, kOwner).ok());
  EXPECT_EQ(CheckSearch(File(0644), kOwner).code(), StatusCode::kNotDirectory);
  EXPECT_EQ(CheckDirWrite(File(0777), kOwner).code(), StatusCode::kNotDirectory);
  EXPECT_EQ(CheckSearch(File(0666, FileType::kDirectory), kStranger).code(),
            StatusCode::kAccessDenied);
  EXPECT_EQ(CheckList(File(0333, FileType::kDirectory), kStranger).code(),
            StatusCode::kAccessDenied);
}

TEST(AccessTest, StickyDirectoriesLimitDeletion) {
  Attr sticky = File(01777, FileType::kDirectory);
  sticky.uid = 5;  // owned by someone else than all the callers below
  Attr victim = File(0644);
  EXPECT_TRUE(CheckDelete(sticky, victim, kOwner).ok());
  EXPECT_TRUE(CheckDelete(sticky, victim, kRoot).ok());
  EXPECT_EQ(CheckDelete(sticky, victim, kStranger).code(), StatusCode::kNotPermitted);
  Credentials dir_owner{5, 5, {}};
  EXPECT_TRUE(CheckDelete(sticky, victim, dir_owner).ok());
  sticky.mode = 0777;
  EXPECT_TRUE(CheckDelete(sticky, victim, kStranger).ok());
  sticky.mode = 01755;
  EXPECT_EQ(CheckDelete(sticky, victim, kOwner).code(), StatusCode::kAccessDenied);
}

TEST(AccessTest, DataAccessHasOwnerOverrideAndReadIfExecute) {
  EXPECT_TRUE(CheckRead(File(0), kOwner).ok());
  EXPECT_TRUE(CheckWrite(File(0), kOwner).ok());
  EXPECT_EQ(CheckRead(File(0600), kStranger).code(), StatusCode::kAccessDenied);
  EXPECT_TRUE(CheckRead(File(0601), kStranger).ok());
  EXPECT_EQ(CheckWrite(File(0604), kStranger).code(), StatusCode::kAccessDenied);
  EXPECT_TRUE(CheckWrite(File(0662), kStranger).ok());
  EXPECT_EQ(CheckRead(File(0777, FileType::kDirectory), kOwner).code(), StatusCode::kIsDirectory);
  EXPECT_EQ(CheckWrite(File(0777, FileType::kSymlink), kOwner).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckRead(File(0777, FileType::kFifo), kOwner).code(), StatusCode::kInvalidArgument);
}

TEST(AccessTest, SetAttrRules) {
  const Attr f = File(0644);
  SetAttrs chmod;
  chmod.mode = 0600;
  EXPECT_TRUE(CheckSetAttr(f, chmod, kOwner).ok());
  EXPECT_TRUE(CheckSetAttr(f, chmod, kRoot).ok());
  EXPECT_EQ(CheckSetAttr(f, chmod, kMember).code(), StatusCode::kNotPermitted);

  SetAttrs chown;
  chown.uid = kStranger.uid;
  EXPECT_EQ(CheckSetAttr(f, chown, kOwner).code(), StatusCode::kNotPermitted);
  EXPECT_TRUE(CheckSetAttr(f, chown, kRoot).ok());
  chown.uid = kOwner.uid;
  EXPECT_TRUE(CheckSetAttr(f, chown, kOwner).ok());
  EXPECT_EQ(CheckSetAttr(f, chown, kStranger).code(), StatusCode::kNotPermitted);

  SetAttrs chgrp;
  chgrp.gid = 7;
  EXPECT_EQ(CheckSetAttr(f, chgrp, kOwner).code(), StatusCode::kNotPermitted);
  Credentials owner_in_7{kOwner.uid, kOwner.gid, {7}};
  EXPECT_TRUE(CheckSetAttr(f, chgrp, owner_in_7).ok());
  EXPECT_EQ(CheckSetAttr(f, chgrp, kMember).code(), StatusCode::kNotPermitted)
      << "membership alone is not ownership";
  chgrp.gid = f.gid;
  EXPECT_TRUE(CheckSetAttr(f, chgrp, kOwner).ok());

  SetAttrs set_time;
  set_time.mtime_how = TimeUpdate::kClientTime;
  EXPECT_TRUE(CheckSetAttr(f, set_time, kOwner).ok());
  EXPECT_EQ(CheckSetAttr(File(0666), set_time, kStranger).code(), StatusCode::kNotPermitted);
  SetAttrs touch;
  touch.atime_how = TimeUpdate::kServerTime;
  EXPECT_TRUE(CheckSetAttr(File(0666), touch, kStranger).ok());
  EXPECT_EQ(CheckSetAttr(File(0644), touch, kStranger).code(), StatusCode::kAccessDenied);
  EXPECT_TRUE(CheckSetAttr(File(0400), touch, kOwner).ok());

  SetAttrs truncate;
  truncate.size = 0;
  EXPECT_TRUE(CheckSetAttr(File(0), truncate, kOwner).ok());
  EXPECT_EQ(CheckSetAttr(File(0644), truncate, kStranger).code(), StatusCode::kAccessDenied);
  EXPECT_EQ(CheckSetAttr(File(0777, FileType::kDirectory), truncate, kOwner).code(),
            StatusCode::kIsDirectory);
}

TEST(AccessTest, ModeSideEffects) {
  SetAttrs chmod;
  chmod.mode = 02755;
  // A non-root owner outside the file's group cannot make it setgid.
  Attr foreign_group = File(0755);
  foreign_group.gid = 999;
  EXPECT_EQ(ModeAfterSetAttr(foreign_group, chmod, kOwner), 0755u);
  EXPECT_EQ(ModeAfterSetAttr(foreign_group, chmod, kRoot), 02755u);
  EXPECT_EQ(ModeAfterSetAttr(File(0755), chmod, kOwner), 02755u);
  EXPECT_EQ(ModeAfterSetAttr(File(0755, FileType::kDirectory), chmod, kStranger), 02755u);

  SetAttrs chgrp;
  chgrp.gid = 7;
  EXPECT_EQ(ModeAfterSetAttr(File(06755), chgrp, kOwner), 0755u);
  EXPECT_EQ(ModeAfterSetAttr(File(06745), chgrp, kOwner), 02745u)
      << "setgid without group execute is a locking mark, not a privilege";
  EXPECT_EQ(ModeAfterSetAttr(File(06755), chgrp, kRoot), 06755u);
  SetAttrs same_group;
  same_group.gid = kOwner.gid;
  EXPECT_EQ(ModeAfterSetAttr(File(06755), same_group, kOwner), 06755u);
  SetAttrs truncate;
  truncate.size = 0;
  EXPECT_EQ(ModeAfterSetAttr(File(04755), truncate, kOwner), 0755u);

  EXPECT_EQ(ModeAfterWrite(File(06755), kOwner), 0755u);
  EXPECT_EQ(ModeAfterWrite(File(06755), kRoot), 06755u);
  EXPECT_EQ(ModeAfterWrite(File(02644), kStranger), 02644u);
}

TEST(AccessTest, NewObjectsBelongToTheCaller) {
  Attr plain_dir = File(0777, FileType::kDirectory);
  NewOwnership own = NewObjectOwnership(plain_dir, kMember, FileType::kRegular, 0640);
  EXPECT_EQ(own.uid, kMember.uid);
  EXPECT_EQ(own.gid, kMember.gid);
  EXPECT_EQ(own.mode, 0640u);

  Attr setgid_dir = File(02777, FileType::kDirectory);
  setgid_dir.gid = 7;
  own = NewObjectOwnership(setgid_dir, kMember, FileType::kRegular, 02640);
  EXPECT_EQ(own.gid, 7u);
  EXPECT_EQ(own.mode, 02640u) << "kMember is in group 7";
  own = NewObjectOwnership(setgid_dir, kStranger, FileType::kRegular, 02640);
  EXPECT_EQ(own.gid, 7u);
  EXPECT_EQ(own.mode, 0640u);
  own = NewObjectOwnership(setgid_dir, kStranger, FileType::kDirectory, 0750);
  EXPECT_EQ(own.mode, 02750u);
}

TEST(AccessTest, NamesAndTargets) {
  EXPECT_TRUE(ValidateName("a").ok());
  EXPECT_TRUE(ValidateName(std::string(kMaxNameBytes, 'x')).ok());
  EXPECT_TRUE(ValidateName("...").ok());
  EXPECT_EQ(ValidateName(std::string(kMaxNameBytes + 1, 'x')).code(), StatusCode::kNameTooLong);
  for (std::string_view bad : std::initializer_list<std::string_view>{"", ".", "..", "a/b", "/",
                                                                      std::string_view("\0", 1)}) {
    EXPECT_EQ(ValidateName(bad).code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_TRUE(ValidateSymlinkTarget("/abs/../path").ok());
  EXPECT_EQ(ValidateSymlinkTarget("").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateSymlinkTarget(std::string_view("a\0b", 3)).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateSymlinkTarget(std::string(kMaxPathBytes + 1, 'x')).code(),
            StatusCode::kNameTooLong);
}

}  // namespace
}  // namespace geofs::vfs
