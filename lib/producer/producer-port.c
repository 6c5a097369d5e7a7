/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>

#include "macro.h"
#include "producer-ipc.h"

/* The ProducerPort methods in the order of Perfetto's service definition: a method's id is
 * its index here. A client looks methods up by name in BindServiceReply, and does not call
 * the ones it cannot find. */
static const struct {
        const char *name;
        const ProtobufCMessageDescriptor *request;
} producer_port_methods[_PRODUCER_PORT_METHOD_MAX] = {
        [PRODUCER_PORT_INITIALIZE_CONNECTION] = { "InitializeConnection", &tracebus__initialize_connection_request__descriptor },
        [PRODUCER_PORT_REGISTER_DATA_SOURCE] = { "RegisterDataSource", &tracebus__register_data_source_request__descriptor },
        [PRODUCER_PORT_UNREGISTER_DATA_SOURCE] = { "UnregisterDataSource", &tracebus__unregister_data_source_request__descriptor },
        [PRODUCER_PORT_COMMIT_DATA] = { "CommitData", &tracebus__commit_data_request__descriptor },
        /* GetAsyncCommand and Sync take an empty request. */
        [PRODUCER_PORT_GET_ASYNC_COMMAND] = { "GetAsyncCommand", &tracebus__producer_port_empty_reply__descriptor },
        [PRODUCER_PORT_REGISTER_TRACE_WRITER] = { "RegisterTraceWriter", &tracebus__register_trace_writer_request__descriptor },
        [PRODUCER_PORT_UNREGISTER_TRACE_WRITER] = { "UnregisterTraceWriter", &tracebus__unregister_trace_writer_request__descriptor },
        [PRODUCER_PORT_NOTIFY_DATA_SOURCE_STARTED] = { "NotifyDataSourceStarted", &tracebus__notify_data_source_started_request__descriptor },
        [PRODUCER_PORT_NOTIFY_DATA_SOURCE_STOPPED] = { "NotifyDataSourceStopped", &tracebus__notify_data_source_stopped_request__descriptor },
        [PRODUCER_PORT_ACTIVATE_TRIGGERS] = { "ActivateTriggers", &tracebus__activate_triggers_request__descriptor },
        [PRODUCER_PORT_SYNC] = { "Sync", &tracebus__producer_port_empty_reply__descriptor },
        [PRODUCER_PORT_UPDATE_DATA_SOURCE] = { "UpdateDataSource", &tracebus__update_data_source_request__descriptor },
};

#define PRODUCER_PORT_METHODS (_PRODUCER_PORT_METHOD_MAX - 1)

static bool method_valid(ProducerPortMethod method) {
        return method >= PRODUCER_PORT_INITIALIZE_CONNECTION && method < _PRODUCER_PORT_METHOD_MAX;
}

const char *producer_port_method_to_string(ProducerPortMethod method) {
        return method_valid(method) ? producer_port_methods[method].name : NULL;
}

ProducerPortMethod producer_port_method_from_string(const char *name) {
        if (!name)
                return _PRODUCER_PORT_METHOD_INVALID;
        for (int m = PRODUCER_PORT_INITIALIZE_CONNECTION; m < _PRODUCER_PORT_METHOD_MAX; m++)
                if (strcmp(producer_port_methods[m].name, name) == 0)
                        return (ProducerPortMethod) m;
        return _PRODUCER_PORT_METHOD_INVALID;
}

const ProtobufCMessageDescriptor *producer_port_request_descriptor(ProducerPortMethod method) {
        return method_valid(method) ? producer_port_methods[method].request : NULL;
}

int producer_port_queue_bind_reply(IpcWriter *writer, uint64_t request_id, const char *service_name) {
        Tracebus__IPCFrame frame = TRACEBUS__IPCFRAME__INIT;
        Tracebus__IPCFrame__BindServiceReply reply = TRACEBUS__IPCFRAME__BIND_SERVICE_REPLY__INIT;
        Tracebus__IPCFrame__BindServiceReply__MethodInfo infos[PRODUCER_PORT_METHODS];
        Tracebus__IPCFrame__BindServiceReply__MethodInfo *pointers[PRODUCER_PORT_METHODS];
        bool bound = service_name && strcmp(service_name, PRODUCER_PORT_SERVICE_NAME) == 0;
        int r;

        assert(writer);

        for (size_t i = 0; bound && i < PRODUCER_PORT_METHODS; i++) {
                infos[i] = (Tracebus__IPCFrame__BindServiceReply__MethodInfo)
                        TRACEBUS__IPCFRAME__BIND_SERVICE_REPLY__METHOD_INFO__INIT;
                infos[i].has_id = true;
                infos[i].id = (uint32_t) (i + 1);
                infos[i].name = (char *) producer_port_methods[i + 1].name;
                pointers[i] = &infos[i];
        }
        if (bound) {
                reply.has_success = reply.success = true;
                reply.has_service_id = true;
                reply.service_id = PRODUCER_PORT_SERVICE_ID;
                reply.n_methods = PRODUCER_PORT_METHODS;
                reply.methods = pointers;
        }
        frame.has_request_id = true;
        frame.request_id = request_id;
        frame.msg_case = TRACEBUS__IPCFRAME__MSG_MSG_BIND_SERVICE_REPLY;
        frame.msg_bind_service_reply = &reply;
        r = ipc_writer_queue(writer, &frame, -1);
        if (r < 0)
                return r;
        return bound;
}

int producer_port_unpack_call(const Tracebus__IPCFrame__InvokeMethod *call,
                              ProducerPortMethod *ret_method, ProtobufCMessage **ret_args) {
        ProducerPortMethod method;
        int r;

        assert(call);
        assert(ret_method);
        assert(ret_args);

        if (call->service_id != PRODUCER_PORT_SERVICE_ID)
                return -ESRCH;
        if (call->method_id < 1 || call->method_id >= _PRODUCER_PORT_METHOD_MAX)
                return -EOPNOTSUPP;
        method = (ProducerPortMethod) call->method_id;
        r = ipc_message_unpack(producer_port_methods[method].request, call->args_proto.data,
                               call->args_proto.len, ret_args);
        if (r < 0)
                return r;
        *ret_method = method;
        return 0;
}
