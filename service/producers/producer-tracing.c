/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A producer's tracing: its shared memory buffer (the service's memfd, sent once with
 * SetupTracing), the data source instances sessions started in it, and the chunks it
 * commits, moved out of the buffer, glued into packets, checked and handed to the sink.
 * Commands go out on the GetAsyncCommand stream; nothing here waits for the producer. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fd-util.h"
#include "log.h"
#include "producers.h"

void producers_set_sink(Producers *p, const ProducerSink *sink, void *userdata) {
        p->sink = sink;
        p->sink_userdata = userdata;
}

uint32_t producers_allocate_buffers(Producers *p, size_t n) {
        uint32_t first = p->last_buffer_id + 1;

        p->last_buffer_id += (uint32_t) n;
        return first;
}

Producer *producers_find(Producers *p, uint64_t id) {
        for (Producer *i = p->list; i; i = i->next)
                if (i->id == id)
                        return i;
        return NULL;
}

uint64_t producers_smb_bytes_uid(const Producers *p, uid_t uid) {
        uint64_t n = 0;

        for (const Producer *i = p->list; i; i = i->next)
                if (i->uid == uid)
                        n += i->smb.size;
        return n;
}

static int send_command(Producer *producer, Tracebus__GetAsyncCommandResponse *command, int fd) {
        int r;

        /* has_more: the stream stays open for the next command. */
        r = ipc_writer_queue_reply(producer->writer, producer->async_request_id, true, true, &command->base, fd);
        if (r < 0)
                return r;
        return producer_update_events(producer);
}

/* The size asked for, else the producer's hint, else the default; a power of two of
 * pages, within SMB_SIZE_MAX. */
static size_t smb_size_for(const Producer *producer, size_t wanted) {
        size_t size = wanted ?: producer->smb_size_hint ?: SMB_SIZE_DEFAULT, pow2 = SMB_PAGE_SIZE_MIN;

        size = MIN(MAX(size, (size_t) SMB_PAGE_SIZE_MIN), (size_t) SMB_SIZE_MAX);
        while (pow2 < size)
                pow2 <<= 1;
        return MIN(pow2, (size_t) SMB_SIZE_MAX);
}

static int setup_tracing(Producer *producer, size_t wanted) {
        Tracebus__GetAsyncCommandResponse command = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__INIT;
        Tracebus__GetAsyncCommandResponse__SetupTracing setup = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__SETUP_TRACING__INIT;
        size_t size = smb_size_for(producer, wanted);
        int r;

        if (producers_smb_bytes_uid(producer->owner, producer->uid) + size > producer->owner->limits.max_smb_bytes_per_uid)
                return -EUSERS;
        if (!producer->reassembler) {
                r = smb_reassembler_new(&producer->reassembler);
                if (r < 0)
                        return r;
        }
        r = smb_create(size, SMB_PAGE_SIZE_MIN, &producer->smb, &producer->smb_fd);
        if (r < 0)
                return r;
        setup.has_shared_buffer_page_size_kb = true;
        setup.shared_buffer_page_size_kb = SMB_PAGE_SIZE_MIN / 1024;
        command.cmd_case = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__CMD_SETUP_TRACING;
        command.setup_tracing = &setup;
        return send_command(producer, &command, producer->smb_fd);
}

/* The session's DataSourceConfig with the fields only the service sets. */
static int build_config(const ProducerStart *start, Tracebus__DataSourceConfig **ret) {
        ProtobufCMessage *m;
        Tracebus__DataSourceConfig *c;
        int r;

        r = ipc_message_unpack(&tracebus__data_source_config__descriptor, start->config, start->config_len, &m);
        if (r < 0)
                return r;
        c = (Tracebus__DataSourceConfig *) m;
        c->has_target_buffer = true;
        c->target_buffer = start->target_buffer;
        c->has_tracing_session_id = true;
        c->tracing_session_id = start->tracing_session_id;
        c->has_trace_duration_ms = true;
        c->trace_duration_ms = start->duration_ms;
        c->has_stop_timeout_ms = true;
        c->stop_timeout_ms = start->stop_timeout_ms;
        c->target_buffer_name = NULL;      /* an index only the session's config knows */
        *ret = c;
        return 0;
}

static int send_setup_and_start(Producer *producer, uint64_t id, Tracebus__DataSourceConfig *config) {
        Tracebus__GetAsyncCommandResponse command = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__INIT;
        Tracebus__GetAsyncCommandResponse__SetupDataSource setup = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__SETUP_DATA_SOURCE__INIT;
        Tracebus__GetAsyncCommandResponse__StartDataSource start = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__START_DATA_SOURCE__INIT;
        int r;

        setup.has_new_instance_id = start.has_new_instance_id = true;
        setup.new_instance_id = start.new_instance_id = id;
        setup.config = start.config = config;
        command.cmd_case = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__CMD_SETUP_DATA_SOURCE;
        command.setup_data_source = &setup;
        r = send_command(producer, &command, -1);
        if (r < 0)
                return r;
        command.cmd_case = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__CMD_START_DATA_SOURCE;
        command.start_data_source = &start;
        return send_command(producer, &command, -1);
}

static bool source_notifies_stop(const Producer *producer, const char *name) {
        for (unsigned i = 0; i < producer->n_sources; i++)
                if (strcmp(producer->sources[i].name, name) == 0)
                        return producer->sources[i].notifies_stop;
        return false;
}

int producer_start_instance(Producer *producer, const ProducerStart *start, uint64_t *ret_instance_id) {
        Tracebus__DataSourceConfig *config = NULL;
        ProducerInstance *grown;
        uint64_t id;
        int r;

        if (!producer->has_async)
                return -ENOTCONN;
        if (producer->n_instances >= PRODUCER_INSTANCES_MAX)
                return -EUSERS;
        grown = reallocarray(producer->instances, producer->n_instances + 1, sizeof(*grown));
        if (!grown)
                return -ENOMEM;
        producer->instances = grown;
        if (!producer->smb.base) {
                r = setup_tracing(producer, start->smb_size);
                if (r < 0)
                        return r;
        }
        r = build_config(start, &config);
        if (r < 0)
                return r;
        id = ++producer->owner->last_instance_id;
        r = send_setup_and_start(producer, id, config);
        ipc_message_free(&config->base);
        if (r < 0)
                return r;
        grown[producer->n_instances++] = (ProducerInstance) {
                .id = id,
                .target_buffer = start->target_buffer,
                .notifies_stop = source_notifies_stop(producer, start->name),
        };
        *ret_instance_id = id;
        return 0;
}

static ProducerInstance *find_instance(Producer *producer, uint64_t id) {
        for (unsigned i = 0; i < producer->n_instances; i++)
                if (producer->instances[i].id == id)
                        return &producer->instances[i];
        return NULL;
}

int producer_flush_instance(Producer *producer, uint64_t instance_id, uint64_t flush_request_id) {
        Tracebus__GetAsyncCommandResponse command = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__INIT;
        Tracebus__GetAsyncCommandResponse__Flush flush = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__FLUSH__INIT;

        if (!find_instance(producer, instance_id))
                return -ENOENT;
        flush.n_data_source_ids = 1;
        flush.data_source_ids = &instance_id;
        flush.has_request_id = true;
        flush.request_id = flush_request_id;
        command.cmd_case = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__CMD_FLUSH;
        command.flush = &flush;
        return send_command(producer, &command, -1);
}

int producer_clear_instance_state(Producer *producer, uint64_t instance_id) {
        Tracebus__GetAsyncCommandResponse command = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__INIT;
        Tracebus__GetAsyncCommandResponse__ClearIncrementalState clear =
                TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__CLEAR_INCREMENTAL_STATE__INIT;
        ProducerInstance *instance = find_instance(producer, instance_id);

        if (!instance || instance->stopping)
                return -ENOENT;
        clear.n_data_source_ids = 1;
        clear.data_source_ids = &instance_id;
        command.cmd_case = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__CMD_CLEAR_INCREMENTAL_STATE;
        command.clear_incremental_state = &clear;
        return send_command(producer, &command, -1);
}

int producer_stop_instance(Producer *producer, uint64_t instance_id, uint64_t flush_request_id) {
        Tracebus__GetAsyncCommandResponse command = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__INIT;
        Tracebus__GetAsyncCommandResponse__StopDataSource stop = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__STOP_DATA_SOURCE__INIT;
        ProducerInstance *instance = find_instance(producer, instance_id);
        int r;

        if (!instance || instance->stopping)
                return -ENOENT;
        /* Its buffer stays its producer's until producer_forget_instance(): the chunks of
         * the flush and of the stop come after this. */
        instance->stopping = true;
        if (flush_request_id > 0) {
                r = producer_flush_instance(producer, instance_id, flush_request_id);
                if (r < 0)
                        return r;
        }
        stop.has_instance_id = true;
        stop.instance_id = instance_id;
        command.cmd_case = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__CMD_STOP_DATA_SOURCE;
        command.stop_data_source = &stop;
        return send_command(producer, &command, -1);
}

void producer_note_instance(Producer *producer, uint64_t instance_id, bool stopped) {
        ProducerInstance *instance = find_instance(producer, instance_id);
        Producers *p = producer->owner;

        if (!instance)
                return;
        if (!stopped) {
                instance->started = true;
                return;
        }
        instance->stopped = true;
        if (p->sink && p->sink->instance_stopped)
                p->sink->instance_stopped(producer, instance_id, p->sink_userdata);
}

static bool buffer_given(const Producer *producer, uint32_t target_buffer) {
        for (unsigned i = 0; i < producer->n_instances; i++)
                if (producer->instances[i].target_buffer == target_buffer)
                        return true;
        return false;
}

void producer_forget_instance(Producer *producer, uint64_t instance_id) {
        ProducerInstance *instance = find_instance(producer, instance_id);
        uint32_t target_buffer;

        if (!instance)
                return;
        target_buffer = instance->target_buffer;
        *instance = producer->instances[--producer->n_instances];
        if (buffer_given(producer, target_buffer))
                return;
        /* Its writers wrote for a buffer that is gone: their ids are free again. */
        for (unsigned i = 0; i < producer->n_writers;)
                if (producer->writers[i].target_buffer == target_buffer)
                        producer->writers[i] = producer->writers[--producer->n_writers];
                else
                        i++;
}

bool producer_instance_stopped(const Producer *producer, uint64_t id) {
        for (unsigned i = 0; i < producer->n_instances; i++)
                if (producer->instances[i].id == id)
                        return producer->instances[i].stopped;
        return true;
}


static ProducerWriter *find_writer(Producer *producer, uint16_t id) {
        for (unsigned i = 0; i < producer->n_writers; i++)
                if (producer->writers[i].id == id)
                        return &producer->writers[i];
        return NULL;
}

/* A writer's target buffer, as its first chunk (or RegisterTraceWriter) says; a writer
 * that changes it loses the chunk. False when the writer cannot be kept. */
static bool writer_targets(Producer *producer, uint16_t id, uint32_t target_buffer) {
        ProducerWriter *w = find_writer(producer, id), *grown;

        if (w)
                return w->target_buffer == target_buffer;
        if (producer->n_writers >= PRODUCER_WRITERS_MAX)
                return false;
        grown = reallocarray(producer->writers, producer->n_writers + 1, sizeof(*grown));
        if (!grown)
                return false;
        producer->writers = grown;
        grown[producer->n_writers++] = (ProducerWriter) { .id = id, .target_buffer = target_buffer };
        return true;
}

static int hand_over(const uint8_t *data, size_t size, uint16_t writer_id, bool dropped, void *userdata) {
        Producer *producer = userdata;
        Producers *p = producer->owner;
        ProducerWriter *w = find_writer(producer, writer_id);
        int r;

        if (!w || !buffer_given(producer, w->target_buffer))
                return 0;
        r = producer_packet_check(data, size);
        if (r < 0) {
                if (r == -EPERM)
                        producer->drops.packets_reserved++;
                else
                        producer->drops.packets_invalid++;
                if (p->sink && p->sink->packet_refused)
                        p->sink->packet_refused(producer, w->target_buffer, r, p->sink_userdata);
        } else if (p->sink && p->sink->packet)
                p->sink->packet(producer, w->target_buffer, writer_id, dropped, data, size, p->sink_userdata);
        return 0;
}

static void move_chunk(Producer *producer, const Tracebus__CommitDataRequest__ChunksToMove *move) {
        SmbChunk chunk = {};

        /* Chunks inside the message are for producers without shared memory. */
        if (move->has_data || smb_take_chunk(&producer->smb, move->page, move->chunk, &chunk) < 0)
                return;
        chunk.target_buffer = move->target_buffer;
        if (!buffer_given(producer, chunk.target_buffer) || !writer_targets(producer, chunk.writer_id, chunk.target_buffer)) {
                producer->drops.chunks_wrong_buffer++;
                smb_chunk_done(&chunk);
                return;
        }
        (void) smb_reassembler_add(producer->reassembler, &chunk);
}

/* The flush of a stop acknowledged: an instance whose data source does not say
 * NotifyDataSourceStopped is done with it (the stop's flush has the instance's id). */
static void flush_acked(Producer *producer, uint64_t flush_request_id) {
        for (unsigned i = 0; i < producer->n_instances; i++) {
                ProducerInstance *instance = &producer->instances[i];

                if (instance->id == flush_request_id && instance->stopping && !instance->notifies_stop) {
                        producer_note_instance(producer, instance->id, true);
                        return;
                }
        }
}

int producer_commit(Producer *producer, const Tracebus__CommitDataRequest *request) {
        int r;

        if (!producer->smb.base)
                return 0;
        for (size_t i = 0; i < request->n_chunks_to_move; i++)
                move_chunk(producer, request->chunks_to_move[i]);
        for (size_t i = 0; i < request->n_chunks_to_patch; i++)
                (void) smb_reassembler_patch(producer->reassembler, request->chunks_to_patch[i]);
        r = smb_reassembler_read(producer->reassembler, false, hand_over, producer);
        /* After its data: the session may finish its stop on it. */
        if (r >= 0 && request->flush_request_id > 0) {
                Producers *p = producer->owner;

                if (p->sink && p->sink->flush_acked)
                        p->sink->flush_acked(producer, request->flush_request_id, p->sink_userdata);
                flush_acked(producer, request->flush_request_id);
        }
        return r;
}

int producer_register_writer(Producer *producer, const Tracebus__RegisterTraceWriterRequest *request) {
        if (request->trace_writer_id == 0 || request->trace_writer_id > SMB_WRITER_ID_MAX)
                return 0;
        (void) writer_targets(producer, (uint16_t) request->trace_writer_id, request->target_buffer);
        return 0;
}

int producer_unregister_writer(Producer *producer, const Tracebus__UnregisterTraceWriterRequest *request) {
        ProducerWriter *w;
        int r = 0;

        if (request->trace_writer_id == 0 || request->trace_writer_id > SMB_WRITER_ID_MAX)
                return 0;
        if (producer->reassembler)
                r = smb_reassembler_end_writer(producer->reassembler, (uint16_t) request->trace_writer_id, hand_over, producer);
        /* Its id may be given to a new writer, of another buffer. */
        w = find_writer(producer, (uint16_t) request->trace_writer_id);
        if (w)
                *w = producer->writers[--producer->n_writers];
        return r;
}

/* Scraped chunks: each must still name its writer's buffer, which a chunk's memory cannot
 * say; the writers known from commits and registrations are the ones kept. */
void producer_scrape(Producer *producer) {
        if (!producer->smb.base)
                return;
        for (uint32_t page = 0; page < producer->smb.n_pages; page++)
                for (uint32_t c = 0; c < SMB_CHUNKS_PER_PAGE_MAX; c++) {
                        SmbChunk chunk = {};
                        ProducerWriter *w;
                        int r = smb_scrape_chunk(&producer->smb, page, c, &chunk);

                        if (r == -ERANGE)
                                break;
                        if (r < 0)
                                continue;
                        w = find_writer(producer, chunk.writer_id);
                        if (!w) {
                                smb_chunk_done(&chunk);
                                continue;
                        }
                        chunk.target_buffer = w->target_buffer;
                        (void) smb_reassembler_add(producer->reassembler, &chunk);
                }
        (void) smb_reassembler_read(producer->reassembler, true, hand_over, producer);
}

void producer_tracing_end(Producer *producer) {
        producer_scrape(producer);
        if (producer->drops.chunks_wrong_buffer + producer->drops.packets_invalid + producer->drops.packets_reserved > 0)
                log_info("Producer %" PRIu64 " (UID %u): dropped %" PRIu64 " chunks for buffers it was not given, "
                         "%" PRIu64 " invalid packets, %" PRIu64 " packets with fields only the service writes.",
                         producer->id, (unsigned) producer->uid, producer->drops.chunks_wrong_buffer,
                         producer->drops.packets_invalid, producer->drops.packets_reserved);
        smb_unmap(&producer->smb);
        producer->smb_fd = safe_close(producer->smb_fd);
        producer->reassembler = smb_reassembler_free(producer->reassembler);
        producer->instances = mfree(producer->instances);
        producer->n_instances = 0;
        producer->writers = mfree(producer->writers);
        producer->n_writers = 0;
}

static void activate_triggers(Producer *producer, const Tracebus__ActivateTriggersRequest *request) {
        Producers *p = producer->owner;

        if (p->sink && p->sink->triggers && request->n_trigger_names > 0)
                p->sink->triggers(producer, request->trigger_names, request->n_trigger_names, p->sink_userdata);
}

int producer_on_tracing_call(Producer *producer, ProducerPortMethod method, const ProtobufCMessage *args) {
        switch (method) {
        case PRODUCER_PORT_COMMIT_DATA:
                return producer_commit(producer, (const Tracebus__CommitDataRequest *) args);
        case PRODUCER_PORT_REGISTER_TRACE_WRITER:
                return producer_register_writer(producer, (const Tracebus__RegisterTraceWriterRequest *) args);
        case PRODUCER_PORT_UNREGISTER_TRACE_WRITER:
                return producer_unregister_writer(producer, (const Tracebus__UnregisterTraceWriterRequest *) args);
        case PRODUCER_PORT_NOTIFY_DATA_SOURCE_STARTED:
                producer_note_instance(producer, ((const Tracebus__NotifyDataSourceStartedRequest *) args)->data_source_id, false);
                return 0;
        case PRODUCER_PORT_NOTIFY_DATA_SOURCE_STOPPED:
                producer_note_instance(producer, ((const Tracebus__NotifyDataSourceStoppedRequest *) args)->data_source_id, true);
                return 0;
        case PRODUCER_PORT_ACTIVATE_TRIGGERS:
                activate_triggers(producer, (const Tracebus__ActivateTriggersRequest *) args);
                return 0;
        default:
                return 0;
        }
}
