#pragma once
/// @file
/// A move-only, type-erased callable with inline storage: tasks posted to an event loop are stored
/// without a heap allocation when their captures fit in kInlineSize bytes (std::move_only_function
/// arrives only with C++23).

#include <cstddef>
#include <new>
#include <type_traits>
#include <typeinfo>
#include <utility>

namespace weft {

template <class Signature>
class UniqueFunction;

/// A move-only callable of signature R(Args...) (see the file's description). Not thread-safe.
template <class R, class... Args>
class UniqueFunction<R(Args...)> {
 public:
  /// Callables up to this size (nothrow-movable, not over-aligned) are stored inline.
  static constexpr std::size_t kInlineSize = 56;

  UniqueFunction() noexcept = default;
  /// An empty function, as the default constructor.
  UniqueFunction(std::nullptr_t) noexcept {}

  /// Holds `f` (moved or copied in): inline when it fits, else on the heap.
  template <class F, class D = std::decay_t<F>,
            class = std::enable_if_t<!std::is_same_v<D, UniqueFunction> && std::is_invocable_r_v<R, D&, Args...>>>
  UniqueFunction(F&& f) {  // NOLINT(google-explicit-constructor): callables convert implicitly
    if constexpr (fits_inline<D>()) {
      ::new (static_cast<void*>(storage_)) D(std::forward<F>(f));
      ops_ = &inline_ops<D>;
    } else {
      *reinterpret_cast<D**>(storage_) = new D(std::forward<F>(f));
      ops_ = &heap_ops<D>;
    }
  }

  /// Takes `other`'s callable; `other` becomes empty.
  UniqueFunction(UniqueFunction&& other) noexcept : ops_(other.ops_) {
    if (ops_) {
      ops_->move(other.storage_, storage_);
      other.ops_ = nullptr;
    }
  }

  /// Destroys the callable held, then takes `other`'s; `other` becomes empty.
  UniqueFunction& operator=(UniqueFunction&& other) noexcept {
    if (this != &other) {
      reset();
      if (other.ops_) {
        ops_ = other.ops_;
        ops_->move(other.storage_, storage_);
        other.ops_ = nullptr;
      }
    }
    return *this;
  }

  UniqueFunction(const UniqueFunction&) = delete;
  UniqueFunction& operator=(const UniqueFunction&) = delete;
  ~UniqueFunction() { reset(); }

  /// Whether a callable is held.
  explicit operator bool() const noexcept { return ops_ != nullptr; }

  /// Calls the callable; requires one to be held.
  R operator()(Args... args) { return ops_->invoke(storage_, std::forward<Args>(args)...); }

  /// The type of the callable held (typeid(void) when empty): for a diagnostic that names a task
  /// (a lambda's type names the function that made it).
  const std::type_info& target_type() const noexcept { return ops_ ? *ops_->type : typeid(void); }

  /// Destroys the callable held, if any; the function becomes empty.
  void reset() noexcept {
    if (ops_) {
      ops_->destroy(storage_);
      ops_ = nullptr;
    }
  }

 private:
  struct Ops {
    R (*invoke)(void*, Args&&...);
    void (*move)(void* from, void* to) noexcept;
    void (*destroy)(void*) noexcept;
    const std::type_info* type;
  };

  template <class D>
  static constexpr bool fits_inline() {
    return sizeof(D) <= kInlineSize && alignof(D) <= alignof(std::max_align_t) &&
           std::is_nothrow_move_constructible_v<D>;
  }

  template <class D>
  static constexpr Ops inline_ops = {
      [](void* s, Args&&... a) -> R { return (*static_cast<D*>(s))(std::forward<Args>(a)...); },
      [](void* from, void* to) noexcept {
        ::new (to) D(std::move(*static_cast<D*>(from)));
        static_cast<D*>(from)->~D();
      },
      [](void* s) noexcept { static_cast<D*>(s)->~D(); }, &typeid(D)};

  template <class D>
  static constexpr Ops heap_ops = {
      [](void* s, Args&&... a) -> R { return (**static_cast<D**>(s))(std::forward<Args>(a)...); },
      [](void* from, void* to) noexcept { *static_cast<D**>(to) = *static_cast<D**>(from); },
      [](void* s) noexcept { delete *static_cast<D**>(s); }, &typeid(D)};

  const Ops* ops_ = nullptr;
  alignas(std::max_align_t) unsigned char storage_[kInlineSize];
};

}  // namespace weft
