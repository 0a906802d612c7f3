/*
 * The stores the collectives module meets through (gloo_store.cpp), for gloo.cpp. C++, private to
 * the module libuform-gloo.so.4.
 */
#ifndef UFORM_MESH_GLOO_STORE_HPP
#define UFORM_MESH_GLOO_STORE_HPP

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

#include <gloo/rendezvous/store.h>

#include "mesh/gloo.h"

namespace uform_gloo {

/* A failure whose status is already known (a store's answer): thrown through Gloo's rendezvous and
 * caught by gloo.cpp's guard before anything else, so the status survives the trip. */
struct status_error : std::runtime_error {
    status_error(uform_status_t status, const std::string &what) : std::runtime_error(what), status(status) {}
    uform_status_t status;
};

/* The store Gloo's rendezvous uses: a FileStore in `folder` when it is not NULL, else `kv` under
 * `prefix` (Gloo's RedisStore for a store of uform__gloo_redis_open, else the kv's functions). Every
 * wait takes `timeout`. */
std::unique_ptr<gloo::rendezvous::Store> make_store(const char *folder, const uform__gloo_kv_t *kv,
                                                    const std::string &prefix, std::chrono::milliseconds timeout);

} // namespace uform_gloo

#endif
