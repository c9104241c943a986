#pragma once
// Everything a weft application usually needs, in one include.

#include "weft/buffer/byte_buf.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/channel/bootstrap.h"
#include "weft/channel/channel.h"
#include "weft/channel/channel_config.h"
#include "weft/channel/context.h"
#include "weft/channel/events.h"
#include "weft/channel/handler.h"
#include "weft/channel/pipeline.h"
#include "weft/core/error.h"
#include "weft/core/event_loop.h"
#include "weft/core/event_loop_group.h"
#include "weft/core/future.h"
#include "weft/transport/blocking.h"
#include "weft/transport/epoll.h"
#include "weft/transport/transport_named.h"
