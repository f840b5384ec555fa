#pragma once
// The engine's event callback: a move-only void() callable that keeps its captures inline
// up to kInlineBytes (std::function keeps 16 bytes inline, so nearly every callback the
// models schedule, a lambda capturing a pointer, two indices and a continuation, cost a
// heap allocation and a free per event). Larger or throwing-move callables go to the heap.
// An empty std::function or a null pointer gives an empty Callback (operator bool false).
#include <cstddef>
#include <functional>
#include <new>
#include <type_traits>
#include <utility>

namespace overlapsim::sim {

class Callback {
 public:
  // Room for a lambda capturing a CollectiveRequest, its tuning and a std::function.
  static constexpr std::size_t kInlineBytes = 160;

  Callback() noexcept = default;
  Callback(std::nullptr_t) noexcept {}  // NOLINT(google-explicit-constructor)

  template <typename F, typename D = std::decay_t<F>,
            typename = std::enable_if_t<!std::is_same_v<D, Callback> &&
                                        !std::is_same_v<D, std::nullptr_t> &&
                                        std::is_invocable_r_v<void, D&>>>
  Callback(F&& f) {  // NOLINT(google-explicit-constructor): as std::function
    emplace(std::forward<F>(f));
  }

  Callback(Callback&& other) noexcept { take(other); }

  // Replaces the callable with `f`, built in place (no temporary Callback to relocate).
  template <typename F>
  void assign(F&& f) {
    using D = std::decay_t<F>;
    reset();
    if constexpr (std::is_same_v<D, Callback>) {
      static_assert(!std::is_lvalue_reference_v<F>, "Callback::assign: move a Callback in");
      take(f);
    } else if constexpr (!std::is_same_v<D, std::nullptr_t>) {
      static_assert(std::is_invocable_r_v<void, D&>, "Callback::assign: not a void() callable");
      emplace(std::forward<F>(f));
    }
  }
  Callback& operator=(Callback&& other) noexcept {
    if (this != &other) {
      reset();
      take(other);
    }
    return *this;
  }
  Callback& operator=(std::nullptr_t) noexcept {
    reset();
    return *this;
  }
  Callback(const Callback&) = delete;
  Callback& operator=(const Callback&) = delete;
  ~Callback() { reset(); }

  explicit operator bool() const noexcept { return ops_ != nullptr; }
  // Precondition: not empty.
  void operator()() { ops_->invoke(storage_); }

  void reset() noexcept {
    if (ops_) {
      ops_->destroy(storage_);
      ops_ = nullptr;
    }
  }

 private:
  // Builds `f` in this empty Callback: inline when it fits, else on the heap; a null
  // function pointer or empty std::function leaves it empty.
  template <typename F>
  void emplace(F&& f) {
    using D = std::decay_t<F>;
    if constexpr (std::is_pointer_v<D> || is_std_function<D>::value) {
      if (!f) return;
    }
    if constexpr (fits_inline<D>()) {
      ::new (static_cast<void*>(storage_)) D(std::forward<F>(f));
      ops_ = &kInlineOps<D>;
    } else {
      ::new (static_cast<void*>(storage_)) D*(new D(std::forward<F>(f)));
      ops_ = &kHeapOps<D>;
    }
  }
  template <typename T>
  struct is_std_function : std::false_type {};
  template <typename R, typename... A>
  struct is_std_function<std::function<R(A...)>> : std::true_type {};

  template <typename D>
  static constexpr bool fits_inline() {
    return sizeof(D) <= kInlineBytes && alignof(D) <= alignof(std::max_align_t) &&
           std::is_nothrow_move_constructible_v<D>;
  }

  struct Ops {
    void (*invoke)(void* self);
    // Move-constructs into `to` from `from` and destroys `from`.
    void (*relocate)(void* to, void* from) noexcept;
    void (*destroy)(void* self) noexcept;
  };

  template <typename D>
  static constexpr Ops kInlineOps = {[](void* self) { (*static_cast<D*>(self))(); },
                                     [](void* to, void* from) noexcept {
                                       D* src = static_cast<D*>(from);
                                       ::new (to) D(std::move(*src));
                                       src->~D();
                                     },
                                     [](void* self) noexcept { static_cast<D*>(self)->~D(); }};

  template <typename D>
  static constexpr Ops kHeapOps = {
      [](void* self) { (**static_cast<D**>(self))(); },
      [](void* to, void* from) noexcept { ::new (to) D*(*static_cast<D**>(from)); },
      [](void* self) noexcept { delete *static_cast<D**>(self); }};

  void take(Callback& other) noexcept {
    ops_ = other.ops_;
    if (ops_) {
      ops_->relocate(storage_, other.storage_);
      other.ops_ = nullptr;
    }
  }

  const Ops* ops_ = nullptr;
  alignas(std::max_align_t) unsigned char storage_[kInlineBytes];
};

}  // namespace overlapsim::sim
