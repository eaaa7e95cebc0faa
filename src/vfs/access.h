// POSIX permission rules shared by the backends.
//
// Backends that run with more privilege than the caller (the local backend
// runs as root) or that have no kernel at all (the in-memory and hub
// backends) decide every permission question here, from the object's
// attributes and the caller's Credentials, so all of them answer alike.
//
// Deliberate choices, following the Linux NFS server (knfsd):
//  - READ and WRITE (and truncation through SETATTR) let the owner through
//    whatever the mode bits say. NFS is stateless: a client that opened a
//    file and then fchmod'ed it to 0 must still reach its data. ACCESS, which
//    the client asks at open time, reports the strict mode bits.
//  - READ is also allowed with execute permission only, so that clients can
//    execute binaries they may not read.
//
// All functions are pure and thread-safe.
#pragma once

#include <cstdint>

#include "geofs/status.h"
#include "geofs/vfs.h"

namespace geofs::vfs {

// Mode bits, spelled out here so callers need not include <sys/stat.h>.
inline constexpr uint32_t kModeSetUid = 04000;
inline constexpr uint32_t kModeSetGid = 02000;
inline constexpr uint32_t kModeSticky = 01000;
inline constexpr uint32_t kModeGroupExec = 0010;
inline constexpr uint32_t kModeAnyExec = 0111;
inline constexpr uint32_t kModeMask = 07777;

// Permission classes for HasPermission.
inline constexpr uint32_t kMayRead = 4;
inline constexpr uint32_t kMayWrite = 2;
inline constexpr uint32_t kMayExec = 1;

inline bool IsRoot(const Credentials& cred) { return cred.uid == 0; }

// True if the mode bits of the caller's class (owner, else group, else other)
// grant every bit of `may` (kMayRead | kMayWrite | kMayExec). Root may read
// and write anything, and execute only directories or objects with at least
// one execute bit.
bool HasPermission(const Attr& attr, const Credentials& cred, uint32_t may);

// The subset of `requested` ACCESS bits the caller is granted. Directories:
// Read = r, Lookup and Execute = x, Modify/Extend/Delete = w and x. Other
// objects: Read = r, Modify/Extend = w, Execute = x; never Lookup or Delete.
uint32_t GrantedAccess(const Attr& attr, const Credentials& cred, uint32_t requested);

// May the caller look names up in `dir`? kNotDirectory, kAccessDenied.
Status CheckSearch(const Attr& dir, const Credentials& cred);
// May the caller list `dir`? kNotDirectory, kAccessDenied.
Status CheckList(const Attr& dir, const Credentials& cred);
// May the caller add or remove names in `dir` (write and search)?
Status CheckDirWrite(const Attr& dir, const Credentials& cred);
// May the caller remove (or rename away) `victim`, a name in `dir`? Adds the
// sticky-directory rule to CheckDirWrite: in a sticky directory only root,
// the directory's owner or the victim's owner may (kNotPermitted otherwise).
Status CheckDelete(const Attr& dir, const Attr& victim, const Credentials& cred);

// May the caller read / write the data of `file` (see the owner override
// above)? kIsDirectory for directories, kInvalidArgument for objects that
// hold no data (symlinks, devices, fifos, sockets), kAccessDenied.
Status CheckRead(const Attr& file, const Credentials& cred);
Status CheckWrite(const Attr& file, const Credentials& cred);

// May the caller apply `req` to an object with attributes `cur`?
//  - mode, or times set to a client-given value: owner or root
//    (kNotPermitted);
//  - uid: only root may give the object to another uid; the owner may
//    "change" it to itself (kNotPermitted);
//  - gid: root, or the owner to a group it belongs to (kNotPermitted);
//  - times set to the server's time: owner, root or anyone with write
//    permission (kAccessDenied);
//  - size: regular files only (kIsDirectory / kInvalidArgument), with
//    CheckWrite.
Status CheckSetAttr(const Attr& cur, const SetAttrs& req, const Credentials& cred);

// The mode (07777) the object must end with once `req` is applied by `cred`,
// with the side effects POSIX asks for on non-directories, for callers other
// than root: chmod drops setgid if the caller is not in the file's group;
// chown/chgrp and truncation drop setuid, and setgid if group-executable.
uint32_t ModeAfterSetAttr(const Attr& cur, const SetAttrs& req, const Credentials& cred);
// The mode a regular file must have after `cred` wrote to it (setuid and
// group-executable setgid dropped unless `cred` is root).
uint32_t ModeAfterWrite(const Attr& cur, const Credentials& cred);

// Owner, group and mode of an object of `type` that `cred` creates in `dir`
// asking for `mode`: the caller owns it; the group is the directory's if the
// directory is setgid (new subdirectories inherit the bit), else the caller's
// gid; a non-root caller outside that group cannot create a setgid file.
struct NewOwnership {
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t mode = 0;
};
NewOwnership NewObjectOwnership(const Attr& dir, const Credentials& cred, FileType type,
                                uint32_t mode);

// Argument checks shared by backends (the front end checks names first; the
// backends check again because they are reachable without it).
// Names: not empty, ".", ".."; no '/' or NUL (kInvalidArgument); at most
// kMaxNameBytes (kNameTooLong).
Status ValidateName(std::string_view name);
// Symlink targets: not empty, no NUL (kInvalidArgument); at most
// kMaxPathBytes (kNameTooLong).
Status ValidateSymlinkTarget(std::string_view target);

}  // namespace geofs::vfs
