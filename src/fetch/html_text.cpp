#include "fetch/html_text.hpp"

#include <gumbo.h>

#include <cstdint>

namespace chock::fetch {

namespace {

bool hidden(GumboTag tag) {
  switch (tag) {
    case GUMBO_TAG_SCRIPT:
    case GUMBO_TAG_STYLE:
    case GUMBO_TAG_NOSCRIPT:
    case GUMBO_TAG_TEMPLATE:
    case GUMBO_TAG_HEAD:
    case GUMBO_TAG_IFRAME:
    case GUMBO_TAG_OBJECT:
    case GUMBO_TAG_SVG:
      return true;
    default:
      return false;
  }
}

bool block(GumboTag tag) {
  switch (tag) {
    case GUMBO_TAG_P:
    case GUMBO_TAG_DIV:
    case GUMBO_TAG_BR:
    case GUMBO_TAG_LI:
    case GUMBO_TAG_UL:
    case GUMBO_TAG_OL:
    case GUMBO_TAG_H1:
    case GUMBO_TAG_H2:
    case GUMBO_TAG_H3:
    case GUMBO_TAG_H4:
    case GUMBO_TAG_H5:
    case GUMBO_TAG_H6:
    case GUMBO_TAG_TR:
    case GUMBO_TAG_TABLE:
    case GUMBO_TAG_PRE:
    case GUMBO_TAG_BLOCKQUOTE:
    case GUMBO_TAG_SECTION:
    case GUMBO_TAG_ARTICLE:
    case GUMBO_TAG_HEADER:
    case GUMBO_TAG_FOOTER:
    case GUMBO_TAG_NAV:
    case GUMBO_TAG_MAIN:
    case GUMBO_TAG_ASIDE:
    case GUMBO_TAG_HR:
    case GUMBO_TAG_DT:
    case GUMBO_TAG_DD:
    case GUMBO_TAG_FIGCAPTION:
      return true;
    default:
      return false;
  }
}

class Writer {
 public:
  void text(std::string_view t, bool pre) {
    for (char c : t) {
      const bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f';
      if (pre) {
        out_ += c == '\r' ? '\n' : c;
        pending_space_ = false;
        continue;
      }
      if (space) {
        pending_space_ = !out_.empty() && out_.back() != '\n';
        continue;
      }
      if (pending_space_) out_ += ' ';
      pending_space_ = false;
      out_ += c;
    }
  }
  void line() {
    pending_space_ = false;
    while (!out_.empty() && out_.back() == ' ') out_.pop_back();
    if (!out_.empty() && out_.back() != '\n') out_ += '\n';
  }
  std::string take() {
    line();
    return std::move(out_);
  }

 private:
  std::string out_;
  bool pending_space_ = false;
};

void walk(const GumboNode* node, Writer& w, bool pre, int depth) {
  if (depth > 512) return;  // gumbo caps nesting itself; this bounds our recursion whatever it does
  if (node->type == GUMBO_NODE_TEXT || node->type == GUMBO_NODE_CDATA ||
      node->type == GUMBO_NODE_WHITESPACE) {
    w.text(node->v.text.text, pre);
    return;
  }
  if (node->type != GUMBO_NODE_ELEMENT && node->type != GUMBO_NODE_TEMPLATE) return;
  const GumboElement& e = node->v.element;
  if (hidden(e.tag)) return;
  const bool is_block = block(e.tag);
  if (is_block) w.line();
  if (e.tag == GUMBO_TAG_LI) w.text("- ", true);
  for (unsigned i = 0; i < e.children.length; ++i)
    walk(static_cast<const GumboNode*>(e.children.data[i]), w, pre || e.tag == GUMBO_TAG_PRE, depth + 1);
  if (is_block) w.line();
}

const GumboNode* find(const GumboNode* node, GumboTag tag, int depth) {
  if (node->type != GUMBO_NODE_ELEMENT || depth > 64) return nullptr;
  if (node->v.element.tag == tag) return node;
  for (unsigned i = 0; i < node->v.element.children.length; ++i)
    if (auto* f = find(static_cast<const GumboNode*>(node->v.element.children.data[i]), tag, depth + 1))
      return f;
  return nullptr;
}

}  // namespace

std::string html_to_text(std::string_view html) {
  // Controls go before the parser sees them: gumbo would turn them into U+FFFD.
  const std::string clean = strip_controls(html);
  GumboOutput* doc = gumbo_parse_with_options(&kGumboDefaultOptions, clean.data(), clean.size());
  Writer w;
  if (const GumboNode* title = find(doc->root, GUMBO_TAG_TITLE, 0)) {
    for (unsigned i = 0; i < title->v.element.children.length; ++i)
      walk(static_cast<const GumboNode*>(title->v.element.children.data[i]), w, false, 0);
    w.line();
  }
  walk(doc->root, w, false, 0);
  std::string out = w.take();
  gumbo_destroy_output(&kGumboDefaultOptions, doc);
  return strip_controls(out);
}

std::string strip_controls(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  static constexpr const char* kReplacement = "\xEF\xBF\xBD";
  for (std::size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b < 0x80) {
      if (b == '\n' || b == '\t' || (b >= 0x20 && b != 0x7f)) out += static_cast<char>(b);
      ++i;
      continue;
    }
    std::size_t length = b >= 0xF0 && b <= 0xF4 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 && b <= 0xDF ? 2 : 0;
    if (b > 0xF4) length = 0;
    std::uint32_t cp = length == 2 ? b & 0x1F : length == 3 ? b & 0x0F : b & 0x07;
    bool ok = length != 0 && i + length <= text.size();
    for (std::size_t k = 1; ok && k < length; ++k) {
      const auto c = static_cast<unsigned char>(text[i + k]);
      ok = (c & 0xC0) == 0x80;
      cp = cp << 6 | (c & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
    ok = ok && !(length == 3 && cp < 0x800) && !(length == 4 && (cp < 0x10000 || cp > 0x10FFFF)) &&
         !(cp >= 0xD800 && cp <= 0xDFFF);
    if (!ok) {
      out += kReplacement;
      ++i;
      continue;
    }
    const bool control = cp <= 0x9F;  // C1
    const bool bidi = (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200E ||
                      cp == 0x200F || cp == 0x061C;
    if (!control && !bidi) out.append(text.substr(i, length));
    i += length;
  }
  return out;
}

}  // namespace chock::fetch
