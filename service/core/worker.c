/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "fd-util.h"
#include "worker.h"

struct Worker {
        pthread_t thread;
        bool thread_started;
        pthread_mutex_t lock;
        pthread_cond_t queued;
        bool stopping;
        WorkerJob *todo, *finished;     /* FIFO lists, under lock */
        int done_fd;                    /* worker -> loop: jobs finished */
        sd_event_source *done_source;
};

static void append(WorkerJob **list, WorkerJob *job) {
        while (*list)
                list = &(*list)->next;
        job->next = NULL;
        *list = job;
}

static void *worker_main(void *userdata) {
        Worker *w = userdata;
        uint64_t one = 1;

        pthread_mutex_lock(&w->lock);
        for (;;) {
                WorkerJob *job;

                while (!w->todo && !w->stopping)
                        pthread_cond_wait(&w->queued, &w->lock);
                if (w->stopping)
                        break;
                job = w->todo;
                w->todo = job->next;
                pthread_mutex_unlock(&w->lock);
                job->run(job);
                pthread_mutex_lock(&w->lock);
                append(&w->finished, job);
                (void) write(w->done_fd, &one, sizeof(one));
        }
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

static WorkerJob *take_list(Worker *w, WorkerJob **list) {
        WorkerJob *jobs;

        pthread_mutex_lock(&w->lock);
        jobs = *list;
        *list = NULL;
        pthread_mutex_unlock(&w->lock);
        return jobs;
}

static void call_done(WorkerJob *jobs, bool ran) {
        while (jobs) {
                WorkerJob *job = jobs;

                jobs = job->next;
                job->next = NULL;
                job->done(job, ran);
        }
}

static int on_jobs_done(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        Worker *w = userdata;
        uint64_t n;

        (void) read(w->done_fd, &n, sizeof(n));
        call_done(take_list(w, &w->finished), true);
        return 0;
}

int worker_new(sd_event *event, Worker **ret) {
        _cleanup_(worker_freep) Worker *w = NULL;
        int r;

        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        (void) pthread_mutex_init(&w->lock, NULL);
        (void) pthread_cond_init(&w->queued, NULL);
        w->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->done_fd < 0)
                return -errno;
        r = sd_event_add_io(event, &w->done_source, w->done_fd, EPOLLIN, on_jobs_done, w);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(w);
        return 0;
}

int worker_submit(Worker *w, WorkerJob *job) {
        int r;

        if (!w->thread_started) {
                r = -pthread_create(&w->thread, NULL, worker_main, w);
                if (r < 0)
                        return r;
                w->thread_started = true;
        }
        pthread_mutex_lock(&w->lock);
        append(&w->todo, job);
        pthread_cond_signal(&w->queued);
        pthread_mutex_unlock(&w->lock);
        return 0;
}

Worker *worker_free(Worker *w) {
        if (!w)
                return NULL;
        if (w->thread_started) {
                pthread_mutex_lock(&w->lock);
                w->stopping = true;
                pthread_cond_signal(&w->queued);
                pthread_mutex_unlock(&w->lock);
                (void) pthread_join(w->thread, NULL);
        }
        call_done(take_list(w, &w->finished), true);
        call_done(take_list(w, &w->todo), false);
        sd_event_source_disable_unref(w->done_source);
        safe_close(w->done_fd);
        (void) pthread_cond_destroy(&w->queued);
        (void) pthread_mutex_destroy(&w->lock);
        return mfree(w);
}
