// Conversions between the hub API's protobuf messages (proto/hub.proto) and
// the vfs types, shared by the hub service and its clients.
#pragma once

#include "geofs/clock.h"
#include "geofs/status.h"
#include "geofs/vfs.h"
#include "hub.pb.h"

namespace geofs::hub {

v1::Time ToProto(const WallTime& t);
WallTime FromProto(const v1::Time& t);

v1::FileType ToProto(vfs::FileType type);
// kInvalidArgument for FILE_TYPE_UNSPECIFIED and unknown values.
Result<vfs::FileType> FromProto(v1::FileType type);

void ToProto(const vfs::Attr& attr, v1::Attr* out);

void ToProto(const vfs::Wcc& wcc, v1::Wcc* out);

// kInvalidArgument for an unknown time-update value.
Result<vfs::SetAttrs> FromProto(const v1::SetAttrs& attrs);

// kInvalidArgument for more than vfs::kMaxGroups groups.
Result<vfs::Credentials> FromProto(const v1::Credentials& cred);

}  // namespace geofs::hub
