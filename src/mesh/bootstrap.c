/*
 * uform_mesh_bootstrap, uform_mesh_describe, uform_mesh_free (uform.h, docs/mesh.md).
 *
 * The bootstrap in directory/job/ (a run of more than one member, once the collectives module is
 * loaded: gloo_load.h):
 *   1. refuse a folder left by an earlier run: a collectives store, facts of a process on this host
 *      that has exited, or facts older than the timeout (measured against the file system's own
 *      clock, through the modification time of a file we have just written);
 *   2. claim our index atomically: the facts are written to a temporary file, synced, and hard-linked
 *      to facts.{index}, which fails if another process holds that index;
 *   3. our own hello barrier: wait for every member's facts, comparing each as it arrives, bounded
 *      by the timeout (Gloo's FileStore would otherwise wait a fixed 30 s, and a size disagreement
 *      inside Gloo aborts the process, so nothing reaches Gloo before the facts agree);
 *   4. Gloo's rendezvous through directory/job/store and its TCP transport on our address;
 *   5. a barrier over the new connections, then every member removes its facts and member 0 the
 *      store and the folder, so a finished job leaves nothing behind.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <math.h>
#include <net/if.h>
#include <netdb.h>
#include <sys/socket.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "core/cpu.h"
#include "core/outcome.h"
#include "exec/executor.h"
#include "mesh/facts.h"
#include "mesh/mesh.h"

#define POLL_MILLISECONDS 20

typedef struct bootstrap_t {
    const char *function;
    uform_outcome_t *outcome;
    size_t index, count;
    int64_t timeout_ms;
    char job_path[PATH_MAX];
    char facts_path[PATH_MAX + 32]; /* our facts.{index} once claimed, else "" */
    char host[256];
    uform__facts_t mine;
} bootstrap_t;

static double now_seconds(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec + (double)time.tv_nsec * 1e-9;
}

static void sleep_milliseconds(long milliseconds) {
    struct timespec pause = {milliseconds / 1000, (milliseconds % 1000) * 1000000L};
    while (nanosleep(&pause, &pause) == -1 && errno == EINTR) {
    }
}

/* Reads a small file whole (NUL-terminated); -1 with errno on failure. */
static int read_small(const char *path, char **text, size_t *length) {
    *text = NULL, *length = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t capacity = 65536, used = 0;
    char *buffer = malloc(capacity + 1);
    if (!buffer) {
        close(fd);
        errno = ENOMEM;
        return -1;
    }
    for (;;) {
        ssize_t got = read(fd, buffer + used, capacity - used);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        used += (size_t)got;
        if (used == capacity) break;
    }
    close(fd);
    buffer[used] = 0;
    *text = buffer, *length = used;
    return 0;
}

static int read_facts(const char *path, uform__facts_t *facts) {
    char *text;
    size_t length;
    if (read_small(path, &text, &length)) return -1;
    uform_status_t status = uform__facts_parse(text, length, facts);
    free(text);
    if (status != UFORM_OK) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

/* The first configured, up, non-loopback IPv4 address, else 127.0.0.1. */
static void default_address(char *address, size_t capacity) {
    snprintf(address, capacity, "127.0.0.1");
    struct ifaddrs *list = NULL;
    if (getifaddrs(&list) != 0) return;
    for (struct ifaddrs *entry = list; entry; entry = entry->ifa_next) {
        if (!entry->ifa_addr || entry->ifa_addr->sa_family != AF_INET) continue;
        if (!(entry->ifa_flags & IFF_UP) || (entry->ifa_flags & IFF_LOOPBACK)) continue;
        const struct sockaddr_in *ip = (const struct sockaddr_in *)entry->ifa_addr;
        if (inet_ntop(AF_INET, &ip->sin_addr, address, (socklen_t)capacity)) break;
    }
    freeifaddrs(list);
}

static int job_name_valid(const char *job) {
    size_t length = strlen(job);
    if (length == 0 || length > 128 || strcmp(job, ".") == 0 || strcmp(job, "..") == 0) return 0;
    for (size_t i = 0; i < length; ++i) {
        char c = job[i];
        int fine = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                   c == '_' || c == '-';
        if (!fine) return 0;
    }
    return 1;
}

/* Binds a socket to `address` (port 0) and lets it go: an address this host does not have is
 * refused here, with our words, before any peer waits for us (and Gloo, which leaks its address
 * list when its own bind fails, never sees it). */
static uform_status_t check_bindable(const char *address, uform_outcome_t *outcome, const char *function) {
    struct addrinfo hints, *found = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC, hints.ai_socktype = SOCK_STREAM, hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
    int error = getaddrinfo(address, "0", &hints, &found);
    if (error == EAI_MEMORY || (error == EAI_SYSTEM && errno == ENOMEM))
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate memory to resolve options.address '%s'",
                           address);
    if (error != 0)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "options.address '%s': %s", address,
                           gai_strerror(error));
    int fd = socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, found->ai_protocol);
    int bound = fd >= 0 && bind(fd, found->ai_addr, found->ai_addrlen) == 0;
    int saved = errno;
    if (fd >= 0) close(fd);
    freeaddrinfo(found);
    if (!bound)
        return uform__fail(outcome, UFORM_IO, function,
                           "cannot bind the collectives to %s: %s (name an address of this host that the other members "
                           "reach)",
                           address, strerror(saved));
    return UFORM_OK;
}

static const char *executor_kind(uform_executor_t executor) {
    if (!executor) return "calling-thread";
    return executor->kind == uform__executor_pool ? "pool" : "threads";
}

static uform_status_t make_facts(bootstrap_t *boot, uform_executor_t executor, uform_cpu_class_t cpu_class,
                                 const uform_mesh_options_t *options, const char *address) {
    uform__facts_t *facts = &boot->mine;
    int major, minor, patch;
    uform_version(&major, &minor, &patch);
    uform_status_t status = uform__facts_set(facts, "protocol", "%d", UFORM__MESH_PROTOCOL);
    if (status == UFORM_OK) status = uform__facts_set(facts, "version", "%d.%d.%d", major, minor, patch);
    if (status == UFORM_OK) status = uform__facts_set(facts, "index", "%zu", boot->index);
    if (status == UFORM_OK) status = uform__facts_set(facts, "count", "%zu", boot->count);
    if (status == UFORM_OK) status = uform__facts_set(facts, "gpus_per_multimem_domain", "%zu", options->gpus_per_multimem_domain);
    if (status == UFORM_OK) status = uform__facts_set(facts, "timeout_ms", "%lld", (long long)boot->timeout_ms);
    if (status == UFORM_OK) status = uform__facts_set(facts, "host", "%s", boot->host);
    if (status == UFORM_OK) status = uform__facts_set(facts, "pid", "%ld", (long)getpid());
    if (status == UFORM_OK) status = uform__facts_set(facts, "executor", "%s", executor_kind(executor));
    if (status == UFORM_OK) status = uform__facts_set(facts, "memory", "host");
    if (status == UFORM_OK) status = uform__facts_set(facts, "cpu_class", "%s", uform_cpu_class_name(cpu_class));
    if (status == UFORM_OK) status = uform__facts_set(facts, "address", "%s", address);
    if (status == UFORM_OK && options->trainer_config) status = uform__facts_add_trainer(facts, options->trainer_config);
    if (status != UFORM_OK)
        return uform__fail(boot->outcome, status, boot->function, "%s",
                           status == UFORM_INVALID_ARGUMENT ? "cannot hold this member's facts: a value is too long"
                                                            : "cannot allocate memory for this member's facts");
    if (options->agreement) {
        status = uform__facts_add_agreement(facts, options->agreement, boot->outcome, boot->function);
        if (status != UFORM_OK) return status;
    }
    status = uform__facts_add_fingerprint(facts);
    if (status != UFORM_OK) return uform__fail(boot->outcome, status, boot->function, "cannot allocate memory for this member's facts");
    return UFORM_OK;
}

static int process_gone(const uform__facts_t *facts, const char *host) {
    const char *their_host = uform__facts_get(facts, "host"), *pid = uform__facts_get(facts, "pid");
    if (!their_host || !pid || strcmp(their_host, host) != 0) return 0;
    long number = strtol(pid, NULL, 10);
    return number > 0 && kill((pid_t)number, 0) == -1 && errno == ESRCH;
}

static uform_status_t stale(bootstrap_t *boot, const char *why) {
    return uform__fail(boot->outcome, UFORM_INVALID_ARGUMENT, boot->function,
                       "the job folder '%s' was left by an earlier run (%s): remove it, or choose another job name",
                       boot->job_path, why);
}

static int facts_index(const char *name, size_t *index) {
    if (strncmp(name, "facts.", 6) != 0 || !name[6]) return 0;
    char *end = NULL;
    unsigned long long value = strtoull(name + 6, &end, 10);
    if (*end) return 0;
    *index = (size_t)value;
    return 1;
}

/* Step 1: nothing in the folder may come from a run that is over. `now` is the file system's time. */
static uform_status_t refuse_stale(bootstrap_t *boot, time_t now) {
    char path[PATH_MAX + 300];
    struct stat info;
    snprintf(path, sizeof path, "%s/store", boot->job_path);
    int stored = stat(path, &info) == 0;
    DIR *folder = opendir(boot->job_path);
    if (!folder)
        return uform__fail(boot->outcome, errno == ENOMEM ? UFORM_OUT_OF_MEMORY : UFORM_IO, boot->function, "cannot list '%s': %s",
                           boot->job_path, strerror(errno));
    uform_status_t status = UFORM_OK;
    struct dirent *entry;
    double limit = (double)boot->timeout_ms / 1000.0 + 10.0;
    while (status == UFORM_OK && (entry = readdir(folder)) != NULL) {
        size_t index;
        if (!facts_index(entry->d_name, &index)) continue;
        snprintf(path, sizeof path, "%s/%s", boot->job_path, entry->d_name);
        uform__facts_t theirs;
        memset(&theirs, 0, sizeof theirs);
        if (stat(path, &info) != 0) continue; /* gone meanwhile */
        if (read_facts(path, &theirs) != 0) {
            if (errno != ENOMEM) continue; /* gone meanwhile */
            status = uform__fail(boot->outcome, UFORM_OUT_OF_MEMORY, boot->function, "cannot allocate memory to read '%s'", path);
            break;
        }
        char why[600];
        const char *pid = uform__facts_get(&theirs, "pid"), *host = uform__facts_get(&theirs, "host");
        if (stored && !process_gone(&theirs, boot->host) && difftime(now, info.st_mtime) <= limit) {
            /* The members of a live run have met, and are about to clear the folder. */
            status = uform__fail(boot->outcome, UFORM_INVALID_ARGUMENT, boot->function,
                                 "job '%s' is already running (its members have met; %s is process %s on host %s): "
                                 "this process cannot join it (a duplicated index, or a member started too late)",
                                 boot->job_path, entry->d_name, pid ? pid : "?", host ? host : "?");
        } else if (process_gone(&theirs, boot->host)) {
            snprintf(why, sizeof why, "%s is from process %s on this host, which has exited", entry->d_name, pid);
            status = stale(boot, why);
        } else if (difftime(now, info.st_mtime) > limit) {
            snprintf(why, sizeof why, "%s, of process %s on host %s, was written %.0f s ago, longer than the timeout",
                     entry->d_name, pid ? pid : "?", host ? host : "?", difftime(now, info.st_mtime));
            status = stale(boot, why);
        }
        uform__facts_free(&theirs);
    }
    closedir(folder);
    if (status == UFORM_OK && stored)
        status = stale(boot, "it holds the collectives' store, so that run got past its bootstrap");
    return status;
}

/* Writes our facts to a temporary file and syncs it; answers the file system's time through *now. */
static uform_status_t write_temporary(bootstrap_t *boot, const char *temporary, time_t *now) {
    char *text = uform__facts_print(&boot->mine);
    if (!text) return uform__fail(boot->outcome, UFORM_OUT_OF_MEMORY, boot->function, "cannot allocate memory to print the facts");
    int fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int failed = fd < 0;
    size_t length = strlen(text), done = 0;
    while (!failed && done < length) {
        ssize_t wrote = write(fd, text + done, length - done);
        if (wrote < 0 && errno == EINTR) continue;
        if (wrote <= 0) failed = 1;
        else done += (size_t)wrote;
    }
    struct stat info;
    if (!failed && (fsync(fd) != 0 || fstat(fd, &info) != 0)) failed = 1;
    int saved = errno;
    if (fd >= 0) close(fd);
    free(text);
    if (failed) {
        unlink(temporary);
        return uform__fail(boot->outcome, UFORM_IO, boot->function, "cannot write '%s': %s", temporary, strerror(saved));
    }
    *now = info.st_mtime;
    return UFORM_OK;
}

/* Step 2: facts.{index} appears atomically and only if no other process holds it. */
static uform_status_t claim(bootstrap_t *boot) {
    char temporary[PATH_MAX + 64];
    snprintf(temporary, sizeof temporary, "%s/.facts.%zu.%ld.tmp", boot->job_path, boot->index, (long)getpid());
    time_t now = 0;
    uform_status_t status = write_temporary(boot, temporary, &now);
    if (status != UFORM_OK) return status;
    status = refuse_stale(boot, now);
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/facts.%zu", boot->job_path, boot->index);
    if (status == UFORM_OK && link(temporary, path) != 0) {
        if (errno == EEXIST) {
            uform__facts_t theirs;
            memset(&theirs, 0, sizeof theirs);
            read_facts(path, &theirs);
            const char *pid = uform__facts_get(&theirs, "pid"), *host = uform__facts_get(&theirs, "host");
            status = uform__fail(boot->outcome, UFORM_INVALID_ARGUMENT, boot->function,
                                 "index %zu of job '%s' is already claimed by process %s on host %s (%s): give every "
                                 "member its own index (if that process has gone, remove '%s')",
                                 boot->index, boot->job_path, pid ? pid : "?", host ? host : "?", path, boot->job_path);
            uform__facts_free(&theirs);
        } else {
            status = uform__fail(boot->outcome, UFORM_IO, boot->function, "cannot create '%s': %s", path, strerror(errno));
        }
    }
    unlink(temporary);
    if (status == UFORM_OK) snprintf(boot->facts_path, sizeof boot->facts_path, "%s", path);
    return status;
}

/* "2, 3 and 7" (at most 24 named). */
static void list_missing(const unsigned char *arrived, size_t count, char *text, size_t capacity) {
    size_t missing = 0, named = 0, used = 0;
    for (size_t i = 0; i < count; ++i) missing += !arrived[i];
    text[0] = 0;
    for (size_t i = 0; i < count && used < capacity; ++i) {
        if (arrived[i]) continue;
        if (named == 24) {
            snprintf(text + used, capacity - used, " and %zu more", missing - named);
            return;
        }
        const char *separator = named == 0 ? "" : (named + 1 == missing ? " and " : ", ");
        used += (size_t)snprintf(text + used, capacity - used, "%s%zu", separator, i);
        named += 1;
    }
}

/* Step 3: every member's facts, each compared as it arrives. */
static uform_status_t hello_barrier(bootstrap_t *boot) {
    unsigned char *arrived = calloc(boot->count, 1);
    if (!arrived)
        return uform__fail(boot->outcome, UFORM_OUT_OF_MEMORY, boot->function, "cannot allocate memory to track %zu members",
                           boot->count);
    arrived[boot->index] = 1;
    size_t waiting = boot->count - 1;
    double deadline = now_seconds() + (double)boot->timeout_ms / 1000.0;
    uform_status_t status = UFORM_OK;
    char path[PATH_MAX + 300], message[UFORM_OUTCOME_MESSAGE_CAPACITY];
    while (status == UFORM_OK && waiting > 0) {
        DIR *folder = opendir(boot->job_path);
        if (!folder && errno == ENOMEM) /* waiting would not bring memory back: say so now */
            status = uform__fail(boot->outcome, UFORM_OUT_OF_MEMORY, boot->function, "cannot allocate memory to list '%s'",
                                 boot->job_path);
        struct dirent *entry;
        while (status == UFORM_OK && folder && (entry = readdir(folder)) != NULL) {
            size_t index;
            if (!facts_index(entry->d_name, &index) || (index < boot->count && arrived[index])) continue;
            snprintf(path, sizeof path, "%s/%s", boot->job_path, entry->d_name);
            uform__facts_t theirs;
            memset(&theirs, 0, sizeof theirs);
            if (read_facts(path, &theirs) != 0) {
                if (errno == ENOMEM)
                    status = uform__fail(boot->outcome, UFORM_OUT_OF_MEMORY, boot->function, "cannot allocate memory to read '%s'",
                                         path);
                continue;
            }
            /* A member that counts differently may even sit beyond our count. */
            if (uform__facts_compare(&boot->mine, boot->index, &theirs, index, message, sizeof message) != 0)
                status = uform__fail(boot->outcome, UFORM_CONFIG_MISMATCH, boot->function,
                                     "the members of job '%s' disagree: %s (fix it, remove the job folder and start "
                                     "every member again)",
                                     boot->job_path, message);
            else if (index < boot->count)
                arrived[index] = 1, waiting -= 1;
            uform__facts_free(&theirs);
        }
        if (folder) closedir(folder);
        if (status != UFORM_OK || waiting == 0) break;
        if (now_seconds() >= deadline) {
            char missing[256];
            list_missing(arrived, boot->count, missing, sizeof missing);
            status = uform__fail(boot->outcome, UFORM_TIMEOUT, boot->function,
                                 "member%s %s of %zu did not arrive in '%s' within %.3g s: start every member with the "
                                 "same directory and job within the timeout",
                                 waiting == 1 ? "" : "s", missing, boot->count, boot->job_path,
                                 (double)boot->timeout_ms / 1000.0);
            break;
        }
        sleep_milliseconds(POLL_MILLISECONDS);
    }
    free(arrived);
    return status;
}

/* Removes a folder's files and the folder (one level: the store holds only files). */
static void remove_folder(const char *path) {
    DIR *folder = opendir(path);
    if (folder) {
        struct dirent *entry;
        char file[PATH_MAX + 300];
        while ((entry = readdir(folder)) != NULL) {
            if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
            snprintf(file, sizeof file, "%s/%s", path, entry->d_name);
            unlink(file);
        }
        closedir(folder);
    }
    rmdir(path);
}

/* Steps 4 and 5. */
static uform_status_t connect_collectives(bootstrap_t *boot, uform_mesh_t mesh) {
    char store[PATH_MAX + 16], said[UFORM_OUTCOME_MESSAGE_CAPACITY];
    snprintf(store, sizeof store, "%s/store", boot->job_path);
    if (mkdir(store, 0755) != 0 && errno != EEXIST)
        return uform__fail(boot->outcome, UFORM_IO, boot->function, "cannot create '%s': %s", store, strerror(errno));
    uform_status_t status = mesh->gloo_api->connect(store, mesh->address, boot->index, boot->count, boot->timeout_ms,
                                                    &mesh->gloo, said, sizeof said);
    if (status == UFORM_OK) status = mesh->gloo_api->barrier(mesh->gloo, said, sizeof said);
    if (status != UFORM_OK)
        return uform__fail(boot->outcome, status, boot->function, "member %zu of %zu, address %s: %s", boot->index,
                           boot->count, mesh->address, said);
    /* Everyone is connected: the facts and the store have served. */
    unlink(boot->facts_path);
    boot->facts_path[0] = 0;
    if (boot->index == 0) remove_folder(store);
    status = mesh->gloo_api->barrier(mesh->gloo, said, sizeof said);
    if (status != UFORM_OK)
        return uform__fail(boot->outcome, status, boot->function, "member %zu of %zu: %s", boot->index, boot->count, said);
    if (boot->index == 0) rmdir(boot->job_path);
    return UFORM_OK;
}

static uform_status_t check_options(bootstrap_t *boot, const uform_mesh_options_t *options, uform_executor_t executor) {
    const char *function = boot->function;
    uform_outcome_t *outcome = boot->outcome;
    if (options->gpus_per_multimem_domain)
        return uform__fail(outcome, UFORM_UNSUPPORTED, function,
                           "options.gpus_per_multimem_domain is %zu, but this build has no GPU support (a CPU member "
                           "needs 0)",
                           options->gpus_per_multimem_domain);
    if (boot->index >= boot->count)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "options.host_domain_index %zu is out of range: the run has %zu member%s (indices 0 to %zu)",
                           boot->index, boot->count, boot->count == 1 ? "" : "s", boot->count - 1);
    double timeout = options->timeout_seconds;
    if (!(timeout >= 0) || timeout > 86400)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "options.timeout_seconds %g is not in [0, 86400] (0 takes 120)", timeout);
    boot->timeout_ms = timeout == 0 ? 120000 : (int64_t)ceil(timeout * 1000.0);
    if (boot->count == 1) return UFORM_OK;
    if (!options->directory || !options->directory[0] || !options->job)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "options.%s is missing: a run of %zu members meets in directory/job",
                           !options->directory || !options->directory[0] ? "directory" : "job", boot->count);
    if (!job_name_valid(options->job))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "options.job '%s' is not one path component of letters, digits, '.', '-' and '_' (at most "
                           "128)",
                           options->job);
    if (options->address) {
        unsigned char ignored[16];
        if (inet_pton(AF_INET, options->address, ignored) != 1 && inet_pton(AF_INET6, options->address, ignored) != 1)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                               "options.address '%s' is not a numeric IPv4 or IPv6 address", options->address);
    }
    struct stat info;
    if (stat(options->directory, &info) != 0 || !S_ISDIR(info.st_mode))
        return uform__fail(outcome, UFORM_IO, function, "cannot use the directory '%s': %s", options->directory,
                           errno && stat(options->directory, &info) != 0 ? strerror(errno) : "not a directory");
    int written = snprintf(boot->job_path, sizeof boot->job_path, "%s/%s", options->directory, options->job);
    if (written < 0 || (size_t)written >= sizeof boot->job_path - 64)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "options.directory is too long");
    (void)executor;
    return UFORM_OK;
}

UFORM_API uform_status_t uform_mesh_bootstrap(uform_executor_t executor, const uform_mesh_options_t *options,
                                              uform_mesh_t *mesh, uform_outcome_t *outcome) {
    const char *function = __func__;
    if (mesh) *mesh = NULL;
    if (!mesh) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "mesh is NULL");
    uform_mesh_options_t zero;
    memset(&zero, 0, sizeof zero);
    if (!options) options = &zero;
    bootstrap_t boot;
    memset(&boot, 0, sizeof boot);
    boot.function = function, boot.outcome = outcome;
    boot.index = options->host_domain_index;
    boot.count = options->host_domain_count ? options->host_domain_count : 1;
    uform_status_t status = check_options(&boot, options, executor);
    if (status != UFORM_OK) return status;
    uform_cpu_class_t cpu_class = executor ? executor->cpu_class : UFORM_CPU_CLASS_UNKNOWN;
    if (!executor) {
        status = uform__cpu_class_resolve(UFORM_CPU_CLASS_UNKNOWN, &cpu_class, outcome, function);
        if (status != UFORM_OK) return status;
    }
    uform_mesh_t made = calloc(1, sizeof *made);
    if (!made) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a mesh");
    made->index = boot.index, made->count = boot.count, made->timeout_ms = boot.timeout_ms;
    made->cpu_class = cpu_class;
    if (options->address) snprintf(made->address, sizeof made->address, "%s", options->address);
    else default_address(made->address, sizeof made->address);
    if (boot.count > 1) {
        /* The collectives' module first: without it this member cannot join, and its peers learn of
         * it by its absence (a timeout naming its index) rather than by a half-made rendezvous. */
        status = uform__gloo_load(&made->gloo_api, outcome, function);
        if (gethostname(boot.host, sizeof boot.host - 1) != 0) snprintf(boot.host, sizeof boot.host, "unknown");
        if (status == UFORM_OK) status = check_bindable(made->address, outcome, function);
        if (status == UFORM_OK) status = make_facts(&boot, executor, cpu_class, options, made->address);
        if (status == UFORM_OK && mkdir(boot.job_path, 0755) != 0 && errno != EEXIST)
            status = uform__fail(outcome, UFORM_IO, function, "cannot create '%s': %s", boot.job_path, strerror(errno));
        if (status == UFORM_OK) status = claim(&boot);
        if (status == UFORM_OK) status = hello_barrier(&boot);
        if (status == UFORM_OK) status = connect_collectives(&boot, made);
        /* Our facts stay only where a peer may still need to read them to learn of a disagreement. */
        if (status != UFORM_OK && status != UFORM_CONFIG_MISMATCH && boot.facts_path[0]) unlink(boot.facts_path);
        uform__facts_free(&boot.mine);
    }
    if (status != UFORM_OK) {
        if (made->gloo) made->gloo_api->free(made->gloo);
        free(made);
        return status;
    }
    *mesh = made;
    return uform__succeed(outcome, function);
}

UFORM_API uform_status_t uform_mesh_describe(uform_mesh_t mesh, uform_mesh_description_t *description) {
    if (!mesh || !description) return UFORM_INVALID_ARGUMENT;
    memset(description, 0, sizeof *description);
    description->host_domain_index = mesh->index;
    description->members_per_host_domain = 1;
    description->members_total = mesh->count;
    description->first_member_index = mesh->index;
    description->multimem_tier = UFORM_MULTIMEM_TIER_SWITCH_REDUCED;
    description->gpu_class = UFORM_GPU_CLASS_UNKNOWN;
    return UFORM_OK;
}

UFORM_API void uform_mesh_free(uform_mesh_t mesh) {
    if (!mesh) return;
    if (mesh->gloo) mesh->gloo_api->free(mesh->gloo);
    free(mesh);
}
