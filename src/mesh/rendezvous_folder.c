/*
 * Meeting in a folder (bootstrap.h): directory/job/, on one host or a file system every host shares.
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
 * A member whose facts disagree leaves them in the folder, so every other member reads them and
 * fails naming the same difference.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "mesh/bootstrap.h"

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

static uform_status_t stale(uform__bootstrap_t *boot, const char *why) {
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
static uform_status_t refuse_stale(uform__bootstrap_t *boot, time_t now) {
    char path[PATH_MAX + 300];
    struct stat info;
    snprintf(path, sizeof path, "%s/store", boot->job_path);
    int stored = stat(path, &info) == 0;
    DIR *folder = opendir(boot->job_path);
    if (!folder)
        return uform__fail(boot->outcome, errno == ENOMEM ? UFORM_OUT_OF_MEMORY : UFORM_IO, boot->function,
                           "cannot list '%s': %s", boot->job_path, strerror(errno));
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
            status = uform__fail(boot->outcome, UFORM_OUT_OF_MEMORY, boot->function, "cannot allocate memory to read '%s'",
                                 path);
            break;
        }
        char why[600];
        const char *pid = uform__facts_get(&theirs, "pid"), *host = uform__facts_get(&theirs, "host");
        if (stored && !uform__bootstrap_process_gone(&theirs, boot->host) && difftime(now, info.st_mtime) <= limit) {
            /* The members of a live run have met, and are about to clear the folder. */
            status = uform__fail(boot->outcome, UFORM_INVALID_ARGUMENT, boot->function,
                                 "job '%s' is already running (its members have met; %s is process %s on host %s): "
                                 "this process cannot join it (a duplicated index, or a member started too late)",
                                 boot->job_path, entry->d_name, pid ? pid : "?", host ? host : "?");
        } else if (uform__bootstrap_process_gone(&theirs, boot->host)) {
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
static uform_status_t write_temporary(uform__bootstrap_t *boot, const char *temporary, time_t *now) {
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
static uform_status_t claim(uform__bootstrap_t *boot) {
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

/* Step 3: every member's facts, each compared as it arrives (one look at the folder). */
static uform_status_t look(void *state, unsigned char *arrived, size_t *waiting) {
    uform__bootstrap_t *boot = state;
    DIR *folder = opendir(boot->job_path);
    if (!folder && errno == ENOMEM) /* waiting would not bring memory back: say so now */
        return uform__fail(boot->outcome, UFORM_OUT_OF_MEMORY, boot->function, "cannot allocate memory to list '%s'",
                           boot->job_path);
    uform_status_t status = UFORM_OK;
    char path[PATH_MAX + 300], where[PATH_MAX + 8];
    snprintf(where, sizeof where, "'%s'", boot->job_path);
    struct dirent *entry;
    while (status == UFORM_OK && folder && (entry = readdir(folder)) != NULL) {
        size_t index;
        if (!facts_index(entry->d_name, &index) || (index < boot->count && arrived[index])) continue;
        snprintf(path, sizeof path, "%s/%s", boot->job_path, entry->d_name);
        uform__facts_t theirs;
        memset(&theirs, 0, sizeof theirs);
        if (read_facts(path, &theirs) != 0) {
            if (errno == ENOMEM)
                status = uform__fail(boot->outcome, UFORM_OUT_OF_MEMORY, boot->function,
                                     "cannot allocate memory to read '%s'", path);
            continue;
        }
        status = uform__bootstrap_arrived(boot, &theirs, index, arrived, waiting, where,
                                          "fix it, remove the job folder and start every member again");
        uform__facts_free(&theirs);
    }
    if (folder) closedir(folder);
    return status;
}

static uform_status_t hello_barrier(uform__bootstrap_t *boot) {
    char where[PATH_MAX + 8];
    snprintf(where, sizeof where, "in '%s'", boot->job_path);
    return uform__bootstrap_barrier(boot, where, "directory", look, boot);
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
static uform_status_t connect_collectives(uform__bootstrap_t *boot, uform_mesh_t mesh) {
    char store[PATH_MAX + 16], said[UFORM_OUTCOME_MESSAGE_CAPACITY];
    snprintf(store, sizeof store, "%s/store", boot->job_path);
    if (mkdir(store, 0755) != 0 && errno != EEXIST)
        return uform__fail(boot->outcome, UFORM_IO, boot->function, "cannot create '%s': %s", store, strerror(errno));
    uform_status_t status = mesh->gloo_api->connect(store, NULL, NULL, mesh->address, boot->index, boot->count,
                                                    boot->timeout_ms, &mesh->gloo, said, sizeof said);
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


uform_status_t uform__bootstrap_folder(uform__bootstrap_t *boot, uform_mesh_t mesh) {
    uform_status_t status = UFORM_OK;
    if (mkdir(boot->job_path, 0755) != 0 && errno != EEXIST)
        status = uform__fail(boot->outcome, UFORM_IO, boot->function, "cannot create '%s': %s", boot->job_path,
                             strerror(errno));
    if (status == UFORM_OK) status = claim(boot);
    if (status == UFORM_OK) status = hello_barrier(boot);
    if (status == UFORM_OK) status = connect_collectives(boot, mesh);
    /* Our facts stay only where a peer may still need to read them to learn of a disagreement. */
    if (status != UFORM_OK && status != UFORM_CONFIG_MISMATCH && boot->facts_path[0]) unlink(boot->facts_path);
    return status;
}
