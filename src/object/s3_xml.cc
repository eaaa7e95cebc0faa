#include "object/s3_xml.h"

#include <charconv>
#include <chrono>

namespace geofs::object {
namespace {

constexpr int kMaxDepth = 64;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

bool IsNameChar(char c) {
  return c != '>' && c != '/' && c != '=' && c != '<' && !IsSpace(c) && c != '"' && c != '\'';
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

class Parser {
 public:
  explicit Parser(std::string_view doc) : s_(doc) {}

  Result<XmlElement> Document() {
    GEOFS_RETURN_IF_ERROR(SkipMisc());
    if (!Peek("<")) return Error("no root element");
    XmlElement root;
    GEOFS_RETURN_IF_ERROR(Element(&root, 0));
    GEOFS_RETURN_IF_ERROR(SkipMisc());
    if (pos_ != s_.size()) return Error("content after the root element");
    return root;
  }

 private:
  Status Error(std::string_view what) const {
    return Status::InvalidArgument("xml: " + std::string(what) + " at offset " +
                                   std::to_string(pos_));
  }

  bool Peek(std::string_view token) const { return s_.substr(pos_).starts_with(token); }

  // Moves past the next `terminator`; false if there is none.
  bool SkipPast(std::string_view terminator) {
    size_t end = s_.find(terminator, pos_);
    if (end == std::string_view::npos) return false;
    pos_ = end + terminator.size();
    return true;
  }

  void SkipSpace() {
    while (pos_ < s_.size() && IsSpace(s_[pos_])) ++pos_;
  }

  // Whitespace, comments and processing instructions around the root.
  Status SkipMisc() {
    for (;;) {
      SkipSpace();
      if (Peek("<?")) {
        if (!SkipPast("?>")) return Error("unterminated processing instruction");
      } else if (Peek("<!--")) {
        if (!SkipPast("-->")) return Error("unterminated comment");
      } else if (Peek("<!")) {
        return Error("DTDs are not supported");
      } else {
        return Status::Ok();
      }
    }
  }

  std::string_view Name() {
    size_t start = pos_;
    while (pos_ < s_.size() && IsNameChar(s_[pos_])) ++pos_;
    return s_.substr(start, pos_ - start);
  }

  static std::string_view LocalName(std::string_view qualified) {
    size_t colon = qualified.rfind(':');
    return colon == std::string_view::npos ? qualified : qualified.substr(colon + 1);
  }

  // Decodes character data up to the next '<' into `out`.
  Status Text(std::string* out) {
    while (pos_ < s_.size() && s_[pos_] != '<') {
      char c = s_[pos_];
      if (c != '&') {
        out->push_back(c);
        ++pos_;
        continue;
      }
      size_t semi = s_.find(';', pos_);
      if (semi == std::string_view::npos || semi - pos_ > 12) return Error("bad entity");
      std::string_view entity = s_.substr(pos_ + 1, semi - pos_ - 1);
      if (entity == "lt") {
        out->push_back('<');
      } else if (entity == "gt") {
        out->push_back('>');
      } else if (entity == "amp") {
        out->push_back('&');
      } else if (entity == "apos") {
        out->push_back('\'');
      } else if (entity == "quot") {
        out->push_back('"');
      } else if (entity.size() > 1 && entity[0] == '#') {
        bool hex = entity[1] == 'x';
        std::string_view digits = entity.substr(hex ? 2 : 1);
        uint32_t cp = 0;
        auto [end, ec] =
            std::from_chars(digits.data(), digits.data() + digits.size(), cp, hex ? 16 : 10);
        if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() ||
            cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
          return Error("bad character reference");
        }
        AppendUtf8(cp, out);
      } else {
        return Error("unknown entity");
      }
      pos_ = semi + 1;
    }
    return Status::Ok();
  }

  // Parses the element starting at pos_ (at '<') into `out`.
  Status Element(XmlElement* out, int depth) {
    if (depth >= kMaxDepth) return Error("elements nested too deeply");
    ++pos_;  // '<'
    std::string_view qualified = Name();
    if (qualified.empty()) return Error("element without a name");
    out->name = LocalName(qualified);
    // Attributes are not needed by any S3 response we read; check their
    // syntax and drop them.
    for (;;) {
      SkipSpace();
      if (Peek("/>")) {
        pos_ += 2;
        return Status::Ok();
      }
      if (Peek(">")) {
        ++pos_;
        break;
      }
      if (Name().empty()) return Error("bad attribute");
      SkipSpace();
      if (!Peek("=")) return Error("attribute without a value");
      ++pos_;
      SkipSpace();
      if (pos_ >= s_.size() || (s_[pos_] != '"' && s_[pos_] != '\'')) {
        return Error("unquoted attribute value");
      }
      char quote = s_[pos_++];
      size_t end = s_.find(quote, pos_);
      if (end == std::string_view::npos) return Error("unterminated attribute value");
      pos_ = end + 1;
    }
    for (;;) {
      if (pos_ >= s_.size()) return Error("unterminated element <" + std::string(qualified) + ">");
      if (Peek("</")) {
        pos_ += 2;
        std::string_view closing = Name();
        SkipSpace();
        if (closing != qualified || !Peek(">")) {
          return Error("mismatched end tag for <" + std::string(qualified) + ">");
        }
        ++pos_;
        return Status::Ok();
      }
      if (Peek("<!--")) {
        if (!SkipPast("-->")) return Error("unterminated comment");
      } else if (Peek("<![CDATA[")) {
        size_t start = pos_ + 9;
        if (!SkipPast("]]>")) return Error("unterminated CDATA section");
        out->text.append(s_.substr(start, pos_ - 3 - start));
      } else if (Peek("<?")) {
        if (!SkipPast("?>")) return Error("unterminated processing instruction");
      } else if (Peek("<!")) {
        return Error("unexpected declaration");
      } else if (Peek("<")) {
        GEOFS_RETURN_IF_ERROR(Element(&out->children.emplace_back(), depth + 1));
      } else {
        GEOFS_RETURN_IF_ERROR(Text(&out->text));
      }
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
};

bool ParseUnsigned(std::string_view s, uint64_t* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

const XmlElement* XmlElement::Child(std::string_view child_name) const {
  for (const XmlElement& c : children) {
    if (c.name == child_name) return &c;
  }
  return nullptr;
}

std::string_view XmlElement::ChildText(std::string_view child_name) const {
  const XmlElement* c = Child(child_name);
  return c ? std::string_view(c->text) : std::string_view();
}

Result<XmlElement> ParseXml(std::string_view doc) { return Parser(doc).Document(); }

Result<S3ListPage> ParseListObjectsV2(std::string_view doc) {
  GEOFS_ASSIGN_OR_RETURN(XmlElement root, ParseXml(doc));
  if (root.name != "ListBucketResult") {
    return Status::InvalidArgument("ListObjectsV2 reply: root element is <" + root.name + ">");
  }
  S3ListPage page;
  for (const XmlElement& c : root.children) {
    if (c.name != "Contents") continue;
    const XmlElement* key = c.Child("Key");
    if (key == nullptr || key->text.empty()) {
      return Status::InvalidArgument("ListObjectsV2 reply: <Contents> without a <Key>");
    }
    ObjectInfo info;
    info.key = key->text;
    if (!ParseUnsigned(c.ChildText("Size"), &info.size)) {
      return Status::InvalidArgument("ListObjectsV2 reply: bad <Size> for " + info.key);
    }
    if (c.Child("LastModified") != nullptr) {
      GEOFS_ASSIGN_OR_RETURN(info.modified, ParseIso8601(c.ChildText("LastModified")));
    }
    page.objects.push_back(std::move(info));
  }
  std::string_view truncated = root.ChildText("IsTruncated");
  if (truncated != "true" && truncated != "false") {
    return Status::InvalidArgument("ListObjectsV2 reply: bad <IsTruncated>");
  }
  page.truncated = truncated == "true";
  page.next_continuation_token = root.ChildText("NextContinuationToken");
  if (page.truncated && page.next_continuation_token.empty()) {
    return Status::InvalidArgument("ListObjectsV2 reply: truncated without a continuation token");
  }
  return page;
}

S3Error ParseS3Error(std::string_view doc) {
  auto root = ParseXml(doc);
  if (!root.ok() || root->name != "Error") return {};
  return {std::string(root->ChildText("Code")), std::string(root->ChildText("Message"))};
}

Result<WallTime> ParseIso8601(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS[.fraction]Z
  auto bad = [&] { return Status::InvalidArgument("bad timestamp '" + std::string(text) + "'"); };
  if (text.size() < 20 || text[4] != '-' || text[7] != '-' ||
      (text[10] != 'T' && text[10] != 't') || text[13] != ':' || text[16] != ':' ||
      (text.back() != 'Z' && text.back() != 'z')) {
    return bad();
  }
  uint64_t y, mo, d, h, mi, s;
  if (!ParseUnsigned(text.substr(0, 4), &y) || !ParseUnsigned(text.substr(5, 2), &mo) ||
      !ParseUnsigned(text.substr(8, 2), &d) || !ParseUnsigned(text.substr(11, 2), &h) ||
      !ParseUnsigned(text.substr(14, 2), &mi) || !ParseUnsigned(text.substr(17, 2), &s)) {
    return bad();
  }
  uint32_t nsec = 0;
  std::string_view rest = text.substr(19, text.size() - 20);
  if (!rest.empty()) {
    if (rest[0] != '.' || rest.size() < 2 || rest.size() > 10) return bad();
    uint64_t frac;
    if (!ParseUnsigned(rest.substr(1), &frac)) return bad();
    for (size_t i = rest.size() - 1; i < 9; ++i) frac *= 10;
    nsec = static_cast<uint32_t>(frac);
  }
  std::chrono::year_month_day ymd{std::chrono::year(static_cast<int>(y)),
                                  std::chrono::month(static_cast<unsigned>(mo)),
                                  std::chrono::day(static_cast<unsigned>(d))};
  if (!ymd.ok() || h > 23 || mi > 59 || s > 60) return bad();
  int64_t days = std::chrono::sys_days(ymd).time_since_epoch().count();
  return WallTime{days * 86400 + static_cast<int64_t>(h * 3600 + mi * 60 + s), nsec};
}

}  // namespace geofs::object
