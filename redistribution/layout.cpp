#include "redistribution/layout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "config/error.hpp"

namespace overlapsim::redistribution {

bool Layout::splits(int axis) const {
  for (const auto& d : dims)
    if (std::find(d.begin(), d.end(), axis) != d.end()) return true;
  return false;
}

bool Layout::is_partial(int axis) const {
  return std::find(partial.begin(), partial.end(), axis) != partial.end();
}

std::int64_t Box::elements() const {
  std::int64_t n = 1;
  for (std::size_t i = 0; i < lo.size(); ++i) n *= std::max<std::int64_t>(0, hi[i] - lo[i]);
  return n;
}

bool Box::empty() const {
  for (std::size_t i = 0; i < lo.size(); ++i)
    if (hi[i] <= lo[i]) return true;
  return false;
}

Box intersect(const Box& a, const Box& b) {
  Box r = a;
  for (std::size_t i = 0; i < a.lo.size(); ++i) {
    r.lo[i] = std::max(a.lo[i], b.lo[i]);
    r.hi[i] = std::min(a.hi[i], b.hi[i]);
  }
  return r;
}

std::int64_t split_factor(const Mesh& mesh, const Layout& layout, std::size_t dim) {
  std::int64_t f = 1;
  for (int a : layout.dims[dim]) f *= mesh.axis_sizes[static_cast<std::size_t>(a)];
  return f;
}

std::int64_t local_elements(const Mesh& mesh, const Shape& shape, const Layout& layout) {
  std::int64_t n = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) n *= shape[i] / split_factor(mesh, layout, i);
  return n;
}

Box block_of(const Mesh& mesh, const Shape& shape, const Layout& layout, int device) {
  const std::vector<int> c = mesh.coords(device);
  Box b;
  b.lo.resize(shape.size());
  b.hi.resize(shape.size());
  for (std::size_t i = 0; i < shape.size(); ++i) {
    std::int64_t index = 0;
    for (int a : layout.dims[i])
      index = index * mesh.axis_sizes[static_cast<std::size_t>(a)] + c[static_cast<std::size_t>(a)];
    const std::int64_t extent = shape[i] / split_factor(mesh, layout, i);
    b.lo[i] = index * extent;
    b.hi[i] = b.lo[i] + extent;
  }
  return b;
}

void validate(const Mesh& mesh, const Shape& shape, const Layout& layout, std::string_view what) {
  if (layout.dims.size() != shape.size())
    throw config::ConfigError(fmt::format(
        "{}: the layout has {} dimensions but the array has {} (expected one entry per dimension)",
        what, layout.dims.size(), shape.size()));
  std::vector<std::string> use(static_cast<std::size_t>(mesh.num_axes()));
  auto claim = [&](int a, const std::string& where) {
    if (a < 0 || a >= mesh.num_axes())
      throw config::ConfigError(fmt::format("{}: mesh axis #{} does not exist", what, a));
    auto& u = use[static_cast<std::size_t>(a)];
    if (!u.empty())
      throw config::ConfigError(fmt::format(
          "{}: axis '{}' is used twice ({} and {}) (expected each mesh axis at most once)", what,
          mesh.axis_names[static_cast<std::size_t>(a)], u, where));
    u = where;
  };
  for (std::size_t i = 0; i < layout.dims.size(); ++i)
    for (int a : layout.dims[i]) claim(a, fmt::format("dimension {}", i));
  for (int a : layout.partial) claim(a, "a pending sum");
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const std::int64_t f = split_factor(mesh, layout, i);
    if (shape[i] % f != 0) {
      std::string axes;
      for (int a : layout.dims[i])
        axes += fmt::format("{}{}", axes.empty() ? "" : "*",
                            mesh.axis_names[static_cast<std::size_t>(a)]);
      throw config::ConfigError(fmt::format(
          "{}: dimension {} of extent {} is not divisible by its split {} = {} (expected even "
          "splits; uneven splits are not supported)",
          what, i, shape[i], axes, f));
    }
  }
}

namespace {

// A cursor over the layout text with the error context.
class Reader {
 public:
  Reader(std::string_view text, std::string_view what) : text_(text), what_(what) {}

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool at_end() {
    skip_space();
    return pos_ >= text_.size();
  }
  char peek() {
    skip_space();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  bool accept(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!accept(c)) fail(fmt::format("'{}'", c));
  }
  std::string word() {
    skip_space();
    const std::size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_' ||
            text_[pos_] == '-' || text_[pos_] == '.'))
      ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }
  std::string quoted() {
    const char q = peek();
    if (q != '\'' && q != '"') fail("a quoted axis name");
    ++pos_;
    const std::size_t end = text_.find(q, pos_);
    if (end == std::string_view::npos) fail("a closing quote");
    std::string s(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }
  [[noreturn]] void fail(const std::string& expected) {
    throw config::ConfigError(fmt::format(
        "{}: cannot read the layout '{}' at column {} (expected {}; layouts are written "
        "P('x', None), P(None, ('x','y')) or [Shard(0), Replicate(), Partial()])",
        what_, text_, pos_ + 1, expected));
  }

 private:
  std::string_view text_;
  std::string_view what_;
  std::size_t pos_ = 0;
};

int axis_of(const Mesh& mesh, const std::string& name, std::string_view what) {
  const int a = mesh.axis_index(name);
  if (a < 0)
    throw config::ConfigError(fmt::format("{}: axis '{}' is not in the mesh {} (expected one of "
                                          "its axes)",
                                          what, name, mesh.to_string()));
  return a;
}

// The axes of one P entry: None, 'x', ('x', 'y'), or an axis set {'x'} after unreduced=.
std::vector<int> read_axes(Reader& r, const Mesh& mesh, std::string_view what) {
  std::vector<int> axes;
  const char c = r.peek();
  if (c == '(' || c == '{' || c == '[') {
    const char close = c == '(' ? ')' : c == '{' ? '}' : ']';
    r.accept(c);
    if (r.accept(close)) return axes;
    do {
      if (r.peek() == close) break;  // trailing comma: ('x',)
      axes.push_back(axis_of(mesh, r.quoted(), what));
    } while (r.accept(','));
    r.expect(close);
    return axes;
  }
  if (c == '\'' || c == '"') {
    axes.push_back(axis_of(mesh, r.quoted(), what));
    return axes;
  }
  const std::string w = r.word();
  if (w != "None") r.fail("None, a quoted axis or a tuple of axes");
  return axes;
}

Layout parse_partition_spec(Reader& r, const Mesh& mesh, std::size_t rank, std::string_view what) {
  Layout layout;
  r.expect('(');
  if (!r.accept(')')) {
    do {
      if (r.peek() == ')') break;
      if (std::isalpha(static_cast<unsigned char>(r.peek()))) {
        // None, or a keyword argument (unreduced=...).
        Reader probe = r;
        const std::string w = probe.word();
        if (w == "unreduced" || w == "partial") {
          r = probe;
          r.expect('=');
          layout.partial = read_axes(r, mesh, what);
          continue;
        }
      }
      layout.dims.push_back(read_axes(r, mesh, what));
    } while (r.accept(','));
    r.expect(')');
  }
  if (layout.dims.size() > rank)
    throw config::ConfigError(fmt::format(
        "{}: the layout has {} entries but the array has {} dimensions (expected at most one "
        "entry per dimension)",
        what, layout.dims.size(), rank));
  layout.dims.resize(rank);
  return layout;
}

Layout parse_placements(Reader& r, const Mesh& mesh, std::size_t rank, std::string_view what) {
  Layout layout;
  layout.dims.resize(rank);
  r.expect('[');
  int axis = 0;
  if (!r.accept(']')) {
    do {
      if (r.peek() == ']') break;
      const std::string w = r.word();
      if (axis >= mesh.num_axes())
        throw config::ConfigError(fmt::format(
            "{}: more placements than the mesh {} has axes (expected one per mesh axis)", what,
            mesh.to_string()));
      r.expect('(');
      if (w == "Shard") {
        const std::string n = r.word();
        char* end = nullptr;
        long d = std::strtol(n.c_str(), &end, 10);
        if (n.empty() || *end != '\0') r.fail("a dimension number in Shard(...)");
        if (d < 0) d += static_cast<long>(rank);
        if (d < 0 || d >= static_cast<long>(rank))
          throw config::ConfigError(fmt::format(
              "{}: Shard({}) names no dimension of a {}-dimensional array (expected 0..{})", what,
              n, rank, rank - 1));
        layout.dims[static_cast<std::size_t>(d)].push_back(axis);
      } else if (w == "Replicate") {
      } else if (w == "Partial") {
        if (r.peek() == '\'' || r.peek() == '"') {
          const std::string op = r.quoted();
          if (op != "sum")
            throw config::ConfigError(fmt::format(
                "{}: Partial('{}') is not supported (expected Partial() or Partial('sum'))", what,
                op));
        }
        layout.partial.push_back(axis);
      } else {
        r.fail("Shard(d), Replicate() or Partial()");
      }
      r.expect(')');
      ++axis;
    } while (r.accept(','));
    r.expect(']');
  }
  if (axis != mesh.num_axes())
    throw config::ConfigError(fmt::format(
        "{}: {} placements for the mesh {} (expected one per mesh axis, {})", what, axis,
        mesh.to_string(), mesh.num_axes()));
  return layout;
}

}  // namespace

Layout parse_layout(std::string_view text, const Mesh& mesh, const Shape& shape,
                    std::string_view what) {
  Reader r(text, what);
  Layout layout;
  if (r.peek() == '[') {
    layout = parse_placements(r, mesh, shape.size(), what);
  } else {
    const std::string head = r.word();
    if (head != "P" && head != "PartitionSpec") r.fail("P(...), PartitionSpec(...) or [...]");
    layout = parse_partition_spec(r, mesh, shape.size(), what);
  }
  if (!r.at_end()) r.fail("the end of the layout");
  validate(mesh, shape, layout, what);
  std::sort(layout.partial.begin(), layout.partial.end());
  return layout;
}

std::string to_string(const Layout& layout, const Mesh& mesh) {
  auto name = [&](int a) {
    return fmt::format("'{}'", mesh.axis_names[static_cast<std::size_t>(a)]);
  };
  std::string s = "P(";
  for (std::size_t i = 0; i < layout.dims.size(); ++i) {
    if (i) s += ", ";
    const auto& d = layout.dims[i];
    if (d.empty()) {
      s += "None";
    } else if (d.size() == 1) {
      s += name(d[0]);
    } else {
      s += "(";
      for (std::size_t k = 0; k < d.size(); ++k) s += (k ? ", " : "") + name(d[k]);
      s += ")";
    }
  }
  if (!layout.partial.empty()) {
    s += layout.dims.empty() ? "unreduced={" : ", unreduced={";
    for (std::size_t k = 0; k < layout.partial.size(); ++k)
      s += (k ? ", " : "") + name(layout.partial[k]);
    s += "}";
  }
  return s + ")";
}

Shape parse_shape(std::string_view text, std::string_view what) {
  Shape shape;
  std::string_view rest = text;
  while (true) {
    const auto x = rest.find('x');
    const std::string item(rest.substr(0, x));
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1)
      throw config::ConfigError(fmt::format(
          "{}: '{}' is not a shape (expected extents >= 1 joined by 'x', e.g. 4096x8192)", what,
          text));
    shape.push_back(v);
    if (x == std::string_view::npos) break;
    rest = rest.substr(x + 1);
  }
  return shape;
}

int parse_dtype_bytes(std::string_view text, std::string_view what) {
  struct Entry {
    const char* name;
    int bytes;
  };
  static constexpr Entry kTypes[] = {{"fp8", 1},  {"int8", 1},  {"bf16", 2},  {"fp16", 2},
                                     {"fp32", 4}, {"int32", 4}, {"fp64", 8}, {"int64", 8}};
  for (const auto& e : kTypes)
    if (text == e.name) return e.bytes;
  throw config::ConfigError(fmt::format(
      "{}: unknown dtype '{}' (expected fp8, int8, bf16, fp16, fp32, int32, fp64 or int64)", what,
      text));
}

}  // namespace overlapsim::redistribution
