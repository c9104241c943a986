#pragma once
/// @file
/// Type-erased messages.
///
/// MessageRef: a borrowed message of any type, as it travels along a pipeline (an address, its
/// type, and how to move it into a box). Building one does not allocate.
/// Message: an owning, move-only box for a message of any type, for when a message must be kept
/// without knowing its type (EmbeddedChannel's queues, queues between threads). Boxing allocates.

#include <concepts>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>

namespace weft {

/// The readable (demangled) name of `type`, for error messages.
std::string type_name(const std::type_info& type);
class MessageRef;

/// The memory a message holds, for bounds that count bytes (the executor offload queue): what the
/// type's `message_size()` member says, the string's bytes for std::string, else sizeof(T).
template <class T>
std::size_t message_size(const T& message) noexcept {
  if constexpr (requires { { message.message_size() } noexcept -> std::convertible_to<std::size_t>; }) {
    return message.message_size();
  } else if constexpr (std::is_same_v<T, std::string>) {
    return sizeof(std::string) + message.capacity();
  } else {
    return sizeof(T);
  }
}

/// Before a message leaves the thread that made it (boxed into a Message for a queue or another
/// thread), it takes its own copy of whatever it borrows: a type that borrows says so with an
/// `own_borrowed()` member (HttpResponse's body view).
template <class T>
void own_borrowed(T& message) {
  if constexpr (requires { message.own_borrowed(); }) message.own_borrowed();
}

/// An owning, move-only box for a message of any type (see the file's description).
class Message {
 public:
  Message() noexcept = default;
  /// The box owns what the value borrowed (see own_borrowed()).
  template <class T, class D = std::decay_t<T>, class = std::enable_if_t<!std::is_same_v<D, Message>>>
  explicit Message(T&& value) : holder_(std::make_unique<Holder<D>>(std::forward<T>(value))) {
    own_borrowed(static_cast<Holder<D>*>(holder_.get())->value);
  }

  /// Whether the box holds a value.
  bool has_value() const noexcept { return holder_ != nullptr; }
  /// The type of the value; typeid(void) when empty.
  const std::type_info& type() const noexcept { return holder_ ? holder_->type() : typeid(void); }
  /// Whether the box holds a T.
  template <class T>
  bool is() const noexcept {
    return holder_ && holder_->type() == typeid(T);
  }
  /// The value, or null when the box holds another type.
  template <class T>
  T* get() noexcept {
    return is<T>() ? &static_cast<Holder<T>*>(holder_.get())->value : nullptr;
  }
  /// Moves the value out; throws std::logic_error naming both types on a mismatch.
  template <class T>
  T take() {
    if (!is<T>()) {
      throw std::logic_error("message holds " + (holder_ ? type_name(type()) : std::string("nothing")) +
                             ", not " + type_name(typeid(T)));
    }
    T out = std::move(static_cast<Holder<T>*>(holder_.get())->value);
    holder_.reset();
    return out;
  }
  /// The address of the value; null when empty.
  void* address() noexcept { return holder_ ? holder_->address() : nullptr; }
  /// A borrowed view of the boxed value, to pass it along a pipeline (a handler may move from it);
  /// the box must hold a value.
  MessageRef ref() noexcept;

 private:
  struct HolderBase {
    virtual ~HolderBase() = default;
    virtual const std::type_info& type() const noexcept = 0;
    virtual void* address() noexcept = 0;
    virtual MessageRef ref() noexcept = 0;
  };
  template <class T>
  struct Holder final : HolderBase {
    template <class U>
    explicit Holder(U&& v) : value(std::forward<U>(v)) {}
    const std::type_info& type() const noexcept override { return typeid(T); }
    void* address() noexcept override { return &value; }
    MessageRef ref() noexcept override;
    T value;
  };
  std::unique_ptr<HolderBase> holder_;
};

namespace detail {
// What a MessageRef knows about its message's type: one static object per type, so that a
// MessageRef is two words (passed in registers from hop to hop) and the common type check is one
// pointer comparison.
struct MessageKind {
  const std::type_info& type;
  Message (*box)(void*);
  std::size_t (*size)(const void*) noexcept;
};
template <class T>
inline constexpr MessageKind message_kind{typeid(T), [](void* o) { return Message(std::move(*static_cast<T*>(o))); },
                                          [](const void* o) noexcept { return message_size(*static_cast<const T*>(o)); }};
}  // namespace detail

/// A borrowed message of any type, as it travels along a pipeline (see the file's description).
class MessageRef {
 public:
  /// A reference to `object`, which must outlive it.
  template <class T>
  static MessageRef of(T& object) noexcept {
    return MessageRef(&object, detail::message_kind<T>);
  }

  /// The message's type.
  const std::type_info& type() const noexcept { return kind_->type; }
  /// Whether the message is a T.
  template <class T>
  bool is() const noexcept {
    // The same kind object, or (across shared libraries, where it may be duplicated) the same type.
    return kind_ == &detail::message_kind<T> || kind_->type == typeid(T);
  }
  /// The message as T; the caller has checked is<T>().
  template <class T>
  T& as() const noexcept {
    return *static_cast<T*>(object_);
  }
  /// Moves the message into an owning box.
  Message take() const { return kind_->box(object_); }
  /// The memory the message holds (see message_size()).
  std::size_t size() const noexcept { return kind_->size(object_); }

 private:
  MessageRef(void* object, const detail::MessageKind& kind) noexcept : object_(object), kind_(&kind) {}
  void* object_;
  const detail::MessageKind* kind_;
};

inline MessageRef Message::ref() noexcept { return holder_->ref(); }

template <class T>
MessageRef Message::Holder<T>::ref() noexcept {
  return MessageRef::of(value);
}

}  // namespace weft
