/*
 * Meeting at a key–value store (bootstrap.h): a tcp:// store that member 0 hosts for the
 * bootstrap's duration (store_server.c), or a Redis server (through the collectives module). The
 * steps are the folder's, over keys under "uform/{job}/":
 *   1. refuse what an earlier run left: facts of a process on this host that has exited, facts older
 *      than the timeout by the store's own clock, the collectives' keys of a run whose members are
 *      gone (a Redis server keeps them until they expire: the timeout plus a minute);
 *   2. claim our index: facts.{index} is added only if absent;
 *   3. the hello barrier: every member's facts, each compared as it arrives, bounded by the timeout.
 *      A member that finds a disagreement adds the key "abort" (its index, status and message), and
 *      every member that reads it fails with that message, so all of them name the same difference
 *      even when the store's host is the one that found it and is about to go;
 *   4. Gloo's rendezvous through the same store, under "uform/{job}/gloo/";
 *   5. a barrier over the new connections; every member deletes its facts, member 0 the collectives'
 *      keys; a second barrier; then member 0 stops its store once every other member has let go of it
 *      (bounded).
 * Every wait is bounded by the timeout: a store that does not answer fails the bootstrap with
 * UFORM_TIMEOUT, a tcp:// store whose host (member 0) has gone with UFORM_PEER_LOST.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mesh/bootstrap.h"
#include "mesh/store.h"

typedef struct meeting_t {
    uform__bootstrap_t *boot;
    uform__gloo_kv_t kv;
    uform__kv_url_t url;
    char where[300];      /* "tcp://HOST:PORT" or "redis://HOST:PORT" */
    char prefix[160];     /* "uform/{job}/" */
    int claimed;
    int store_broken;     /* a store call failed: nothing more is asked of it */
    int64_t ttl_ms;
} meeting_t;

static void key_of(const meeting_t *meeting, const char *name, char *key, size_t capacity) {
    snprintf(key, capacity, "%s%s", meeting->prefix, name);
}

/* A store call that failed: the bootstrap fails with its status, saying where. */
static uform_status_t store_failed(meeting_t *meeting, uform_status_t status, const char *doing, const char *said) {
    meeting->store_broken = 1;
    return uform__fail(meeting->boot->outcome, status, meeting->boot->function,
                       "member %zu of %zu, job '%s' at %s: %s: %s", meeting->boot->index, meeting->boot->count,
                       meeting->boot->job, meeting->where, doing, said);
}

/* Reads facts.{j} (or another key) when it is there: *found 0 otherwise. */
static uform_status_t read_facts(meeting_t *meeting, const char *name, uform__facts_t *facts, int *found) {
    char key[UFORM__KV_KEY_LIMIT], said[UFORM_OUTCOME_MESSAGE_CAPACITY] = "";
    key_of(meeting, name, key, sizeof key);
    void *value = NULL;
    size_t length = 0;
    uform_status_t status = meeting->kv.get(meeting->kv.state, key, &value, &length, found, said, sizeof said);
    if (status != UFORM_OK) return store_failed(meeting, status, "reading the members' facts", said);
    memset(facts, 0, sizeof *facts);
    if (*found && uform__facts_parse(value, length, facts) != UFORM_OK) {
        free(value);
        return uform__fail(meeting->boot->outcome, UFORM_OUT_OF_MEMORY, meeting->boot->function,
                           "cannot allocate memory to read the facts");
    }
    free(value);
    return UFORM_OK;
}

static int64_t written_ms(const uform__facts_t *facts) {
    const char *written = uform__facts_get(facts, "written_ms");
    return written ? strtoll(written, NULL, 10) : 0;
}

/* Whether facts read at the store's time `now` are an earlier run's; the reason into `why`. */
static int left_behind(const meeting_t *meeting, const uform__facts_t *facts, const char *name, int64_t now,
                       char *why, size_t capacity) {
    const uform__bootstrap_t *boot = meeting->boot;
    const char *pid = uform__facts_get(facts, "pid"), *host = uform__facts_get(facts, "host");
    double age = (double)(now - written_ms(facts)) / 1000.0;
    if (uform__bootstrap_process_gone(facts, boot->host)) {
        snprintf(why, capacity, "%s is from process %s on this host, which has exited", name, pid ? pid : "?");
        return 1;
    }
    if (age > (double)boot->timeout_ms / 1000.0 + 10.0) {
        snprintf(why, capacity, "%s, of process %s on host %s, was written %.0f s ago, longer than the timeout", name,
                 pid ? pid : "?", host ? host : "?", age);
        return 1;
    }
    return 0;
}

static uform_status_t stale(const meeting_t *meeting, const char *why) {
    const uform__bootstrap_t *boot = meeting->boot;
    if (meeting->url.scheme == UFORM__KV_REDIS)
        return uform__fail(boot->outcome, UFORM_INVALID_ARGUMENT, boot->function,
                           "job '%s' at %s was left by an earlier run (%s): its keys expire a minute after that run's "
                           "timeout (or delete %s*), or choose another job name",
                           boot->job, meeting->where, why, meeting->prefix);
    return uform__fail(boot->outcome, UFORM_INVALID_ARGUMENT, boot->function,
                       "job '%s' at %s was left by an earlier run (%s): choose another job name", boot->job,
                       meeting->where, why);
}

/* Step 1: every member's facts that are there already, and the collectives' first key. */
static uform_status_t refuse_stale(meeting_t *meeting, int64_t now) {
    uform__bootstrap_t *boot = meeting->boot;
    char name[64], why[600];
    uform_status_t status = UFORM_OK;
    int live_member_0 = 0;
    for (size_t j = 0; j < boot->count && status == UFORM_OK; ++j) {
        snprintf(name, sizeof name, "facts.%zu", j);
        uform__facts_t theirs;
        int found = 0;
        status = read_facts(meeting, name, &theirs, &found);
        if (status != UFORM_OK || !found) continue;
        if (left_behind(meeting, &theirs, name, now, why, sizeof why)) status = stale(meeting, why);
        else if (j == 0) live_member_0 = 1;
        uform__facts_free(&theirs);
    }
    if (status != UFORM_OK) return status;
    char key[UFORM__KV_KEY_LIMIT], said[UFORM_OUTCOME_MESSAGE_CAPACITY] = "";
    key_of(meeting, "gloo/0", key, sizeof key);
    void *value = NULL;
    size_t length = 0;
    int found = 0;
    status = meeting->kv.get(meeting->kv.state, key, &value, &length, &found, said, sizeof said);
    free(value);
    if (status != UFORM_OK) return store_failed(meeting, status, "looking for an earlier run", said);
    if (found && live_member_0)
        return uform__fail(boot->outcome, UFORM_INVALID_ARGUMENT, boot->function,
                           "job '%s' at %s is already running (its members are connecting): this process cannot join "
                           "it (a duplicated index, or a member started too late)",
                           boot->job, meeting->where);
    if (found) return stale(meeting, "it holds the collectives' keys of members that have gone");
    return UFORM_OK;
}

/* Step 2. */
static uform_status_t claim(meeting_t *meeting, int64_t now) {
    uform__bootstrap_t *boot = meeting->boot;
    uform_status_t status = uform__facts_set(&boot->mine, "written_ms", "%lld", (long long)now);
    char *text = status == UFORM_OK ? uform__facts_print(&boot->mine) : NULL;
    if (!text) return uform__fail(boot->outcome, UFORM_OUT_OF_MEMORY, boot->function, "cannot allocate memory to print the facts");
    char name[64], key[UFORM__KV_KEY_LIMIT], said[UFORM_OUTCOME_MESSAGE_CAPACITY] = "";
    snprintf(name, sizeof name, "facts.%zu", boot->index);
    key_of(meeting, name, key, sizeof key);
    int added = 0;
    status = meeting->kv.add(meeting->kv.state, key, text, strlen(text), meeting->ttl_ms, &added, said, sizeof said);
    free(text);
    if (status != UFORM_OK) return store_failed(meeting, status, "writing this member's facts", said);
    if (added) {
        meeting->claimed = 1;
        return UFORM_OK;
    }
    uform__facts_t theirs;
    int found = 0;
    status = read_facts(meeting, name, &theirs, &found);
    if (status != UFORM_OK) return status;
    char why[600];
    if (found && left_behind(meeting, &theirs, name, now, why, sizeof why)) {
        uform__facts_free(&theirs);
        return stale(meeting, why);
    }
    const char *pid = uform__facts_get(&theirs, "pid"), *host = uform__facts_get(&theirs, "host");
    status = uform__fail(boot->outcome, UFORM_INVALID_ARGUMENT, boot->function,
                         "index %zu of job '%s' at %s is already claimed by process %s on host %s: give every member "
                         "its own index",
                         boot->index, boot->job, meeting->where, pid ? pid : "?", host ? host : "?");
    uform__facts_free(&theirs);
    return status;
}

/* The "abort" key: "index\tstatus\tmessage". */
static uform_status_t add_abort(meeting_t *meeting, uform_status_t status, const char *message) {
    char key[UFORM__KV_KEY_LIMIT], value[UFORM_OUTCOME_MESSAGE_CAPACITY + 128], said[UFORM_OUTCOME_MESSAGE_CAPACITY];
    key_of(meeting, "abort", key, sizeof key);
    snprintf(value, sizeof value, "%zu\t%d\t%s", meeting->boot->index, (int)status, message);
    int added = 0;
    return meeting->kv.add(meeting->kv.state, key, value, strlen(value), meeting->ttl_ms, &added, said, sizeof said);
}

/* Whether a member has stopped the bootstrap: fails the outcome with its status and message. */
static int aborted(meeting_t *meeting, uform_status_t *status) {
    char key[UFORM__KV_KEY_LIMIT], said[UFORM_OUTCOME_MESSAGE_CAPACITY] = "";
    key_of(meeting, "abort", key, sizeof key);
    void *value = NULL;
    size_t length = 0;
    int found = 0;
    uform_status_t read = meeting->kv.get(meeting->kv.state, key, &value, &length, &found, said, sizeof said);
    if (read != UFORM_OK) {
        *status = store_failed(meeting, read, "waiting for the members", said);
        return 1;
    }
    if (!found) return 0;
    unsigned long member = 0;
    int code = 0, consumed = 0;
    const char *text = value;
    if (sscanf(text, "%lu\t%d\t%n", &member, &code, &consumed) < 2 || code <= 0 || code > UFORM_INTERNAL)
        code = UFORM_INTERNAL, consumed = 0;
    /* A disagreement is every member's; any other failure was that member's own, and it has gone. */
    if (code == UFORM_CONFIG_MISMATCH)
        *status = uform__fail(meeting->boot->outcome, UFORM_CONFIG_MISMATCH, meeting->boot->function,
                              "member %lu stopped the bootstrap of job '%s' at %s: %s", member, meeting->boot->job,
                              meeting->where, text + consumed);
    else
        *status = uform__fail(meeting->boot->outcome, UFORM_PEER_LOST, meeting->boot->function,
                              "member %lu left the bootstrap of job '%s' at %s (%s: %s)", member, meeting->boot->job,
                              meeting->where, uform_status_name((uform_status_t)code), text + consumed);
    free(value);
    return 1;
}

/* Step 3: one look at the store (the facts of every member not yet arrived, and "abort"). */
static uform_status_t look(void *state, unsigned char *arrived, size_t *waiting) {
    meeting_t *meeting = state;
    uform__bootstrap_t *boot = meeting->boot;
    uform_status_t status = UFORM_OK;
    char name[64], where[sizeof boot->job + sizeof meeting->where + 8];
    snprintf(where, sizeof where, "'%s' at %s", boot->job, meeting->where);
    for (size_t j = 0; j < boot->count && status == UFORM_OK; ++j) {
        if (arrived[j]) continue;
        snprintf(name, sizeof name, "facts.%zu", j);
        uform__facts_t theirs;
        int found = 0;
        status = read_facts(meeting, name, &theirs, &found);
        if (status != UFORM_OK || !found) continue;
        status = uform__bootstrap_arrived(boot, &theirs, j, arrived, waiting, where, "fix it and start every member again");
        if (status == UFORM_CONFIG_MISMATCH) {
            /* The others read it as "member 2 stopped the bootstrap ...: count: member 0 has ...". */
            char message[UFORM_OUTCOME_MESSAGE_CAPACITY], told[UFORM_OUTCOME_MESSAGE_CAPACITY + 64];
            uform__facts_compare(&boot->mine, boot->index, &theirs, j, message, sizeof message);
            char *mark = strstr(message, " (this process)");
            if (mark) memmove(mark, mark + 15, strlen(mark + 15) + 1);
            snprintf(told, sizeof told, "%s (fix it and start every member again)", message);
            add_abort(meeting, status, told); /* best effort: the others may still read it */
        }
        uform__facts_free(&theirs);
    }
    if (status == UFORM_OK && *waiting > 0) aborted(meeting, &status);
    return status;
}

static uform_status_t hello_barrier(meeting_t *meeting) {
    char where[sizeof meeting->where + sizeof meeting->boot->job + 16];
    snprintf(where, sizeof where, "at %s (job '%s')", meeting->where, meeting->boot->job);
    return uform__bootstrap_barrier(meeting->boot, where, "rendezvous", look, meeting);
}

static void remove_key(meeting_t *meeting, const char *name) {
    char key[UFORM__KV_KEY_LIMIT], said[128];
    key_of(meeting, name, key, sizeof key);
    meeting->kv.remove(meeting->kv.state, key, said, sizeof said);
}

/* Steps 4 and 5 (but stopping the store). */
static uform_status_t connect_collectives(meeting_t *meeting, uform_mesh_t mesh) {
    uform__bootstrap_t *boot = meeting->boot;
    char prefix[UFORM__KV_KEY_LIMIT], said[UFORM_OUTCOME_MESSAGE_CAPACITY];
    key_of(meeting, "gloo/", prefix, sizeof prefix);
    uform_status_t status = mesh->gloo_api->connect(NULL, &meeting->kv, prefix, mesh->address, boot->index, boot->count,
                                                    boot->timeout_ms, &mesh->gloo, said, sizeof said);
    if (status == UFORM_OK) status = mesh->gloo_api->barrier(mesh->gloo, said, sizeof said);
    if (status != UFORM_OK)
        return uform__fail(boot->outcome, status, boot->function, "member %zu of %zu, address %s: %s", boot->index,
                           boot->count, mesh->address, said);
    char name[64];
    snprintf(name, sizeof name, "facts.%zu", boot->index);
    remove_key(meeting, name);
    meeting->claimed = 0;
    if (boot->index == 0)
        for (size_t j = 0; j < boot->count; ++j) {
            snprintf(name, sizeof name, "gloo/rank_%zu", j);
            remove_key(meeting, name);
            snprintf(name, sizeof name, "gloo/%zu", j);
            remove_key(meeting, name);
        }
    status = mesh->gloo_api->barrier(mesh->gloo, said, sizeof said);
    if (status != UFORM_OK)
        return uform__fail(boot->outcome, status, boot->function, "member %zu of %zu: %s", boot->index, boot->count, said);
    return UFORM_OK;
}

static uform_status_t meet(meeting_t *meeting, uform_mesh_t mesh) {
    int64_t now = 0;
    char said[UFORM_OUTCOME_MESSAGE_CAPACITY] = "";
    uform_status_t status = meeting->kv.now_ms(meeting->kv.state, &now, said, sizeof said);
    if (status != UFORM_OK) return store_failed(meeting, status, "reading the store's clock", said);
    status = refuse_stale(meeting, now);
    if (status == UFORM_OK) status = claim(meeting, now);
    if (status == UFORM_OK) status = hello_barrier(meeting);
    if (status == UFORM_OK) status = connect_collectives(meeting, mesh);
    return status;
}

/* Member 0 keeps its store up until the others have let go of it (they close their connection once
 * they are through, once they have read the disagreement that stopped the bootstrap, or once their
 * own wait for a missing member ends), at most a few seconds; after any other failure it stops the
 * store at once, and the others fail as soon as they next ask it (UFORM_PEER_LOST: member 0 left). */
static void stop_store(uform__kv_server_t *server, int64_t timeout_ms, int linger) {
    double limit = linger ? (double)timeout_ms / 1000.0 : 0;
    double deadline = uform__seconds_now() + (limit < 5.0 ? limit : 5.0);
    while (uform__kv_server_connections(server) > 0 && uform__seconds_now() < deadline)
        uform__bootstrap_sleep(UFORM__BOOTSTRAP_POLL_MS);
    uform__kv_server_stop(server);
}

uform_status_t uform__bootstrap_store(uform__bootstrap_t *boot, uform_mesh_t mesh, const char *rendezvous) {
    meeting_t meeting;
    memset(&meeting, 0, sizeof meeting);
    meeting.boot = boot;
    uform_status_t status = uform__kv_url_parse(rendezvous, &meeting.url, boot->outcome, boot->function);
    if (status != UFORM_OK) return status;
    snprintf(meeting.where, sizeof meeting.where, "%s", rendezvous);
    snprintf(meeting.prefix, sizeof meeting.prefix, "uform/%s/", boot->job);
    meeting.ttl_ms = boot->timeout_ms + 60000;
    uform__kv_server_t *server = NULL;
    if (meeting.url.scheme == UFORM__KV_TCP && boot->index == 0)
        status = uform__kv_server_start(meeting.url.port, boot->job, &server, boot->outcome, boot->function);
    if (status == UFORM_OK && meeting.url.scheme == UFORM__KV_TCP) {
        status = uform__kv_tcp_open(&meeting.url, boot->job, boot->timeout_ms, &meeting.kv, boot->outcome, boot->function);
        if (status == UFORM_OK && server) uform__kv_tcp_host(&meeting.kv, server);
    } else if (status == UFORM_OK) {
        char said[UFORM_OUTCOME_MESSAGE_CAPACITY] = "";
        status = mesh->gloo_api->redis_open(meeting.url.host, meeting.url.port, boot->timeout_ms, &meeting.kv, said,
                                            sizeof said);
        if (status != UFORM_OK) store_failed(&meeting, status, "connecting", said);
    }
    if (status == UFORM_OK) {
        status = meet(&meeting, mesh);
        /* A member that holds its index (or hosts the store) and fails on its own (memory, the
         * collectives' transport) tells the others at once through the "abort" key rather than leave
         * them to time out — but
         * not when the store failed, nor for a timeout (each member names the missing ones itself),
         * nor for what others already report (a disagreement, a lost peer). */
        if ((meeting.claimed || server) && !meeting.store_broken && status != UFORM_OK &&
            status != UFORM_CONFIG_MISMATCH && status != UFORM_TIMEOUT && status != UFORM_PEER_LOST)
            add_abort(&meeting, status, boot->outcome ? boot->outcome->message : uform_status_name(status));
        if (meeting.claimed) {
            char name[64];
            snprintf(name, sizeof name, "facts.%zu", boot->index);
            remove_key(&meeting, name);
        }
    }
    if (meeting.kv.close) meeting.kv.close(meeting.kv.state);
    if (server)
        stop_store(server, boot->timeout_ms,
                   status == UFORM_OK || status == UFORM_CONFIG_MISMATCH || status == UFORM_TIMEOUT);
    return status;
}
