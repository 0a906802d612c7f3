/*
 * A bootstrap in progress (bootstrap.c): what the two ways of meeting share — through a folder
 * (rendezvous_folder.c) or through a key–value store (rendezvous_store.c). Both take the same steps
 * (docs/mesh.md, "Bootstrap"): refuse what an earlier run left, claim this member's index atomically,
 * wait for every member's facts comparing each as it arrives (bounded by the timeout), let Gloo
 * meet through the same rendezvous, then clear everything away. Private to src/mesh/.
 */
#ifndef UFORM_MESH_BOOTSTRAP_H
#define UFORM_MESH_BOOTSTRAP_H

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "core/outcome.h"
#include "core/clock.h"
#include "mesh/facts.h"
#include "mesh/mesh.h"

#define UFORM__BOOTSTRAP_POLL_MS 20

typedef struct uform__bootstrap_t {
    const char *function;
    uform_outcome_t *outcome;
    size_t index, count;
    int64_t timeout_ms;
    char job[132];
    char host[256];
    uform__facts_t mine;
    /* the folder's */
    char job_path[PATH_MAX];
    char facts_path[PATH_MAX + 32]; /* our facts.{index} once claimed, else "" */
} uform__bootstrap_t;

static inline void uform__bootstrap_sleep(long milliseconds) {
    struct timespec pause = {milliseconds / 1000, (milliseconds % 1000) * 1000000L};
    while (nanosleep(&pause, &pause) == -1 && errno == EINTR) {
    }
}

/* "2, 3 and 7" (at most 24 named) of the members not yet arrived. */
void uform__bootstrap_list_missing(const unsigned char *arrived, size_t count, char *text, size_t capacity);

/* Whether `facts` are of a process on `host` (this one's) that has exited. */
int uform__bootstrap_process_gone(const uform__facts_t *facts, const char *host);

/* One look at the rendezvous for the hello barrier: reads the facts of members that have not arrived
 * (arrived[j] 0), compares each through uform__bootstrap_arrived, and answers UFORM_OK (keep
 * waiting, or done once *waiting is 0) or a failure. */
typedef uform_status_t (*uform__bootstrap_look_t)(void *state, unsigned char *arrived, size_t *waiting);

/* The hello barrier: looks every UFORM__BOOTSTRAP_POLL_MS until every member has arrived, a look
 * fails, or the timeout passes (UFORM_TIMEOUT listing the missing members, "did not arrive WHERE",
 * with `what` the rendezvous' kind in the advice: "directory", "rendezvous"). */
uform_status_t uform__bootstrap_barrier(uform__bootstrap_t *boot, const char *where, const char *what,
                                        uform__bootstrap_look_t look, void *state);

/* Member `index`'s facts have arrived: compared with ours, UFORM_CONFIG_MISMATCH naming the first
 * difference (`advice` ends the message), else marked arrived (when within our count). */
uform_status_t uform__bootstrap_arrived(uform__bootstrap_t *boot, const uform__facts_t *theirs, size_t index,
                                        unsigned char *arrived, size_t *waiting, const char *where,
                                        const char *advice);

/* Meets in directory/job (rendezvous_folder.c): boot->job_path is set. */
uform_status_t uform__bootstrap_folder(uform__bootstrap_t *boot, uform_mesh_t mesh);

/* Meets at a tcp:// or redis:// store (rendezvous_store.c). */
uform_status_t uform__bootstrap_store(uform__bootstrap_t *boot, uform_mesh_t mesh, const char *rendezvous);

#endif
