// The small part of XML that S3 responses need: elements, attributes
// (skipped), character data with entity and CDATA decoding, comments and
// processing instructions (skipped). No DTDs (rejected) or namespaces (a
// "p:name" element is named "name"). For ListObjectsV2 and error bodies.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "geofs/clock.h"
#include "geofs/status.h"
#include "object/object_store.h"

namespace geofs::object {

struct XmlElement {
  std::string name;
  // Character data directly inside this element, decoded.
  std::string text;
  std::vector<XmlElement> children;

  // The first child called `name`, or nullptr.
  const XmlElement* Child(std::string_view name) const;
  // Text of the first child called `name`, or "" if there is none.
  std::string_view ChildText(std::string_view name) const;
};

// Parses a whole document into its root element. kInvalidArgument on
// malformed input (unbalanced tags, bad entities, nesting over 64 levels).
Result<XmlElement> ParseXml(std::string_view doc);

// A ListObjectsV2 result page. Keys are as S3 returned them (full keys).
struct S3ListPage {
  std::vector<ObjectInfo> objects;
  bool truncated = false;
  std::string next_continuation_token;
};
Result<S3ListPage> ParseListObjectsV2(std::string_view doc);

// The Code and Message of an S3 <Error> body; empty strings when `doc` is not
// one (bodies of HEAD replies and of proxies are not).
struct S3Error {
  std::string code;
  std::string message;
};
S3Error ParseS3Error(std::string_view doc);

// "2024-01-02T03:04:05.678Z" (ISO 8601 in UTC, as S3 writes LastModified).
Result<WallTime> ParseIso8601(std::string_view text);

}  // namespace geofs::object
