#include "engine/compiler/cubin.hpp"

#include <cstdint>
#include <cstring>

namespace kiln::compiler {
namespace {

// .nv.info records: a format byte, an attribute byte, then by format nothing, one byte, a
// 16-bit value, or a 16-bit size and that many bytes.
constexpr unsigned char kFormatNone = 1, kFormatByte = 2, kFormatHalf = 3, kFormatSized = 4;
constexpr unsigned char kFrameSize = 0x11, kRegCount = 0x2f;  // EIATTR_FRAME_SIZE, EIATTR_REGCOUNT

// Bounds-checked little-endian reads of an ELF64 image.
struct Image {
  std::string_view bytes;
  template <class T>
  bool read(std::uint64_t at, T& out) const {
    if (at > bytes.size() || bytes.size() - at < sizeof(T)) return false;
    std::memcpy(&out, bytes.data() + at, sizeof(T));
    return true;
  }
  std::string_view cstr(std::uint64_t at) const {
    if (at >= bytes.size()) return {};
    const std::string_view rest = bytes.substr(at);
    return rest.substr(0, rest.find('\0'));
  }
};

struct Section {
  std::uint32_t name = 0, type = 0;
  std::uint64_t offset = 0, size = 0;
  std::uint32_t link = 0;
};

bool section(const Image& im, std::uint64_t table, std::uint16_t entry, std::uint32_t i,
             Section& s) {
  const std::uint64_t at = table + std::uint64_t(i) * entry;
  return im.read(at, s.name) && im.read(at + 4, s.type) && im.read(at + 24, s.offset) &&
         im.read(at + 32, s.size) && im.read(at + 40, s.link) && s.offset <= im.bytes.size() &&
         s.size <= im.bytes.size() - s.offset;
}

// The index of `symbol` in the symbol table `symtab` (names in section `strtab`), or -1.
long find_symbol(const Image& im, const Section& symtab, const Section& strtab,
                 std::string_view symbol) {
  for (std::uint64_t at = 0; at + 24 <= symtab.size; at += 24) {
    std::uint32_t name = 0;
    if (im.read(symtab.offset + at, name) && name < strtab.size &&
        im.cstr(strtab.offset + name) == symbol)
      return long(at / 24);
  }
  return -1;
}

// Applies the (symbol, value) records of a global .nv.info section to `facts`.
void read_info(const Image& im, const Section& info, long symbol, CubinFacts& facts) {
  for (std::uint64_t at = info.offset, end = info.offset + info.size; at + 2 <= end;) {
    unsigned char format = 0, attribute = 0;
    im.read(at, format);
    im.read(at + 1, attribute);
    std::uint16_t size = 0;
    if (format == kFormatNone)
      size = 0;
    else if (format == kFormatByte)
      size = 1;
    else if (format == kFormatHalf)
      size = 2;
    else if (format == kFormatSized && im.read(at + 2, size))
      at += 2;
    else
      return;  // not a record this reader knows: stop rather than misread
    std::uint32_t sym = 0, value = 0;
    if (format == kFormatSized && size == 8 && im.read(at + 2, sym) && im.read(at + 6, value) &&
        long(sym) == symbol) {
      if (attribute == kRegCount) facts.registers = int(value);
      if (attribute == kFrameSize) facts.stack_bytes = int(value);
    }
    at += 2 + size;
  }
}

}  // namespace

CubinFacts read_cubin(std::string_view bytes, std::string_view symbol) {
  CubinFacts facts;
  const Image im{bytes};
  unsigned char ident[5] = {};
  if (bytes.size() < 64 ||
      std::memcmp(bytes.data(),
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      !im.read(4, ident[4]) || ident[4] != 2)
    return facts;  // not a 64-bit ELF: PTX, or damaged
  std::uint64_t table = 0;
  std::uint16_t entry = 0, count = 0, names = 0;
  if (!im.read(0x28, table) || !im.read(0x3a, entry) || !im.read(0x3c, count) ||
      !im.read(0x3e, names) || entry < 64)
    return facts;
  Section shstr;
  if (!section(im, table, entry, names, shstr)) return facts;
  Section symtab, strtab;
  bool have_symtab = false;
  for (std::uint32_t i = 0; i < count; ++i) {
    Section s;
    if (section(im, table, entry, i, s) && s.type == 2 /* SHT_SYMTAB */ &&
        section(im, table, entry, s.link, strtab)) {
      symtab = s;
      have_symtab = true;
    }
  }
  const long sym = have_symtab ? find_symbol(im, symtab, strtab, symbol) : -1;
  if (sym < 0) return facts;
  for (std::uint32_t i = 0; i < count; ++i) {
    Section s;
    if (section(im, table, entry, i, s) && s.name < shstr.size &&
        im.cstr(shstr.offset + s.name) == ".nv.info")
      read_info(im, s, sym, facts);
  }
  return facts;
}

}  // namespace kiln::compiler
