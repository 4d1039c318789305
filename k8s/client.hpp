// Kubernetes API client for bpfnet's Kubernetes mode: cluster configuration (in-cluster or kubeconfig), plain
// requests (GET/PUT/POST/PATCH/DELETE) with typed errors, and a list-then-watch Watcher that hands its caller the
// full current state of one collection after every change (reconcile from state, not from events).
//
// Not supported: exec plugins and auth providers in a kubeconfig (refused), label/field selectors on watches beyond
// what the caller puts into the collection path.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

namespace bpfnet::k8s {

using json = nlohmann::json;

// --- configuration -----------------------------------------------------------------------------------------

class ConfigError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct ClusterConfig {
    std::string server;     // "https://host:port" (or "http://..." for the test stand-in)
    std::string ca_file;    // PEM file that verifies the server (empty: system CAs)
    std::string ca_data;    // PEM text (kubeconfig certificate-authority-data, decoded)
    std::string token;      // static bearer token (kubeconfig user token)
    std::string token_file; // bearer token re-read whenever the file's mtime changes (service account)
    // A client certificate and its key (kubeconfig client-certificate / client-key, or their -data forms),
    // PEM: files, or the text itself. Both or neither.
    std::string client_cert_file, client_key_file;
    std::string client_cert_data, client_key_data;
    bool insecure_skip_tls_verify = false;
};

inline constexpr const char *kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

// From KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT and SA_DIR/{token,ca.crt}.
ClusterConfig in_cluster_config(const std::string &sa_dir = kServiceAccountDir);
// From a kubeconfig (YAML or JSON): current-context -> cluster (server, certificate-authority[-data],
// insecure-skip-tls-verify) and user (token, tokenFile, client-certificate[-data] with client-key[-data]).
// Relative file paths are relative to the kubeconfig. A user that authenticates otherwise (exec plugins,
// auth-provider, username/password) is refused with a ConfigError: running anonymously instead would only
// fail later, with 403s that do not say why.
ClusterConfig kubeconfig_config(const std::string &path);
// The same from the kubeconfig's text; path names it in errors and anchors its relative paths.
ClusterConfig kubeconfig_from_text(const std::string &text, const std::string &path);
// Empty path: in-cluster; otherwise the kubeconfig at PATH. Throws ConfigError naming the missing field.
ClusterConfig load_cluster_config(const std::string &path_or_empty);

std::string base64_decode(std::string_view in); // throws ConfigError on invalid input

// The bearer token: static, or a file re-read when its modification time (or size) changes, so rotated
// service-account tokens are picked up without a restart. Thread-safe.
class TokenSource {
public:
    TokenSource() = default;
    explicit TokenSource(const ClusterConfig &config);
    std::string current(); // empty when there is no token
private:
    std::mutex mutex_;
    std::string static_token_;
    std::string file_;
    std::string cached_;
    timespec mtime_{};
    std::int64_t size_ = -1;
};

// --- requests ----------------------------------------------------------------------------------------------

struct Response {
    long status = 0;        // HTTP status
    std::string raw;        // body as received
    json body;              // parsed body (discarded value when not JSON)
    long retry_after_s = 0; // the answer's Retry-After (429, 503), in seconds; 0 without one
};

// Non-2xx answer from the API; message is the API Status message when there is one.
class ApiError : public std::runtime_error {
public:
    ApiError(long status, std::string reason, std::string message);
    long status() const { return status_; }
    const std::string &reason() const { return reason_; }
    const std::string &api_message() const { return message_; }

private:
    long status_;
    std::string reason_;
    std::string message_;
};

// 409: the object changed since it was read (stale metadata.resourceVersion) or already exists. Re-read and
// retry.
class ConflictError : public ApiError {
public:
    using ApiError::ApiError;
};

// The request did not get an HTTP answer (connection refused, TLS failure, timeout, ...).
class TransportError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class ApiClient {
public:
    explicit ApiClient(ClusterConfig config);
    ~ApiClient();
    ApiClient(const ApiClient &) = delete;
    ApiClient &operator=(const ApiClient &) = delete;

    static constexpr std::chrono::milliseconds kDefaultTimeout{30000};

    // Throw ApiError/ConflictError on non-2xx, TransportError without an answer; return the JSON body.
    json get(const std::string &path, std::chrono::milliseconds timeout = kDefaultTimeout);
    json put(const std::string &path, const json &body, std::chrono::milliseconds timeout = kDefaultTimeout);
    json post(const std::string &path, const json &body, std::chrono::milliseconds timeout = kDefaultTimeout);
    // A JSON merge patch (RFC 7386): changes only the fields the body names, so a status written by others
    // (conditions) stays as it is.
    json patch(const std::string &path, const json &merge_patch, std::chrono::milliseconds timeout = kDefaultTimeout);
    json del(const std::string &path);

    // Any method; never throws on HTTP status (only TransportError). Writes (POST, PUT, PATCH) carry
    // fieldManager=bpfnet-loader, so the server's managedFields name us. timeout bounds the whole request:
    // callers on the reconcile path pass less than the default.
    Response request(const std::string &method, const std::string &path, const json *body = nullptr,
                     std::chrono::milliseconds timeout = kDefaultTimeout);

    // Streams a GET: on_data is called with each piece of the body as it arrives; returning false aborts.
    // should_stop is polled while idle (about once a second) and aborts when true.
    struct StreamResult {
        long status = 0;
        bool aborted = false;      // on_data or should_stop asked to stop
        bool stalled = false;      // nothing arrived for idle_limit
        bool transport_ok = false; // the body ended properly (final chunk seen)
        std::string error;         // curl's error when !transport_ok
        std::string error_body;    // the body of a non-2xx answer (not passed to on_data)
        long retry_after_s = 0;    // as in Response
    };
    // idle_limit (zero: none): abort with `stalled` when no byte arrives for that long.
    StreamResult stream(const std::string &path, const std::function<bool(std::string_view)> &on_data,
                        const std::function<bool()> &should_stop, long max_seconds,
                        std::chrono::milliseconds idle_limit = std::chrono::milliseconds(0));

    const ClusterConfig &config() const { return config_; }

    static constexpr const char *kFieldManager = "bpfnet-loader";
    static std::string user_agent(); // "bpfnet-loader/VERSION"

private:
    // Sets a CURL handle up for PATH; its curl_slist* of headers goes to `headers` (the caller frees it).
    void prepare(void *curl, const std::string &path, void *&headers, const char *content_type = "application/json");
    ClusterConfig config_;
    TokenSource token_;
    // Requests reuse pooled handles and their live connections (keep-alive) instead of a new TCP and TLS
    // handshake each time; TLS sessions and DNS answers are shared by every handle (see client.cpp).
    struct SharedConnections;
    std::unique_ptr<SharedConnections> shared_;
};

// Raises the matching ApiError for a non-2xx response.
[[noreturn]] void throw_api_error(const Response &r);

// --- watch -------------------------------------------------------------------------------------------------

// Key of an object in a snapshot: "namespace/name", or "name" for cluster-scoped objects.
using Snapshot = std::map<std::string, json>;

struct WatchOptions {
    std::chrono::milliseconds initial_backoff{200};
    std::chrono::milliseconds max_backoff{30000};
    double jitter = 0.2;        // each delay is multiplied by a factor in [1 - jitter, 1 + jitter]
    long timeout_seconds = 300; // server-side timeoutSeconds of one watch request
    // A watch that delivers nothing, not even a bookmark, for this long is stalled (a stuck connection, proxy or
    // server): abandoned, and a new watch started at once from the last resourceVersion. kube-apiserver sends
    // a bookmark about once a minute on a quiet watch but promises no interval: the default leaves room for
    // two, so a quiet healthy watch is not taken for a stalled one.
    std::chrono::seconds idle_timeout{150};
    // A list is read in pages of at most this many objects (limit/continue, as client-go's reflector reads
    // its first list), so that a cluster's thousands of Services or EndpointSlices never arrive as one body.
    long page_size = 500;
    // Injectable for tests: sleep (default: interruptible by stop()) and a uniform random in [0, 1).
    std::function<void(std::chrono::milliseconds)> sleep;
    std::function<double()> random;
};

struct WatchStats {
    std::atomic<std::uint64_t> lists{0};   // list requests started
    std::atomic<std::uint64_t> listed{0};  // lists that replaced the state (the watch is synced once this is > 0)
    std::atomic<std::uint64_t> watches{0}; // watch requests started
    std::atomic<std::uint64_t> events{0};  // ADDED/MODIFIED/DELETED applied
    std::atomic<std::uint64_t> bookmarks{0};
    std::atomic<std::uint64_t> expired{0};   // 410s
    std::atomic<std::uint64_t> bad_input{0}; // malformed lines/lists, unexpected types, non-410 ERROR events,
                                             // truncated streams
    std::atomic<std::uint64_t> failures{0};  // failed list/watch attempts (each followed by a backoff)
    std::atomic<std::uint64_t> stalls{0};    // watches abandoned after idle_timeout without a byte
};

// One line of a watch stream (the watch protocol: {"type": ..., "object": ...} per line), decoded.
struct WatchEvent {
    enum class Kind {
        Blank,    // an empty line: nothing
        Changed,  // ADDED or MODIFIED: object, key, resource_version
        Deleted,  // key, resource_version
        Bookmark, // resource_version only
        Expired,  // ERROR with code 410: the resourceVersion is too old (detail: its message)
        Error,    // any other ERROR (detail: its message)
        Bad,      // not a watch event (detail: why)
    };
    Kind kind = Kind::Blank;
    std::string type; // "ADDED", "MODIFIED", "DELETED" for Changed and Deleted
    std::string key;  // object_key of the object
    std::string resource_version;
    std::string detail;
    json object;
};
// Total: every line decodes to a kind, and nothing a line holds makes it throw.
WatchEvent decode_watch_line(std::string_view line);

class Watcher {
public:
    // Called on the watcher's thread after the initial list, every re-list and every applied
    // ADDED/MODIFIED/DELETED, with the full current state (valid during the call). Not after bookmarks.
    using OnChange = std::function<void(const Snapshot &)>;
    // collection: e.g. "/api/v1/namespaces/NS/services" or "/apis/coordination.k8s.io/v1/leases".
    Watcher(ApiClient &client, std::string collection, OnChange on_change, WatchOptions options = {});
    ~Watcher();
    Watcher(const Watcher &) = delete;
    Watcher &operator=(const Watcher &) = delete;

    void start(); // runs in its own thread
    void stop();  // returns once the thread has ended
    void run();   // the loop itself, until stop()

    std::string resource_version() const;
    // At least one list succeeded: the state is the API server's, not merely empty.
    bool synced() const { return stats_.listed > 0; }
    // Changes whenever the state may have changed (a list, an applied event).
    std::uint64_t generation() const { return stats_.listed + stats_.events; }
    Snapshot snapshot() const;
    // Calls read with the current state under the watcher's lock, without copying it: for callers that need a
    // small part of a large collection. read must be quick and must not call back into the watcher.
    void read(const std::function<void(const Snapshot &)> &read) const;
    const WatchStats &stats() const { return stats_; }

    // Delay before attempt number `attempt` (0-based) of a failing sequence; exposed for tests.
    std::chrono::milliseconds backoff(unsigned attempt) const;

private:
    enum class Outcome { Reconnect, Relist, Failed, FailedRelist, Stalled };
    bool list();
    // One page of a list: its items added to `into`; the continue token of the next ("" after the last), the
    // list's resourceVersion. False (logged) when the page failed; `expired` set when the server no longer
    // has the list's snapshot (410 on a continue: the list starts over).
    bool list_page(const std::string &continue_token, Snapshot &into, std::string &next, std::string &rv,
                   bool &expired);
    Outcome watch_once();
    // Applies one line; returns false (after logging) when the stream must be abandoned.
    bool apply_line(std::string_view line, Outcome &outcome);
    void deliver();
    void pause(std::chrono::milliseconds d);
    // The next pause lasts at least what the server asked for with Retry-After (429 Too Many Requests, an
    // API server protecting itself under API Priority and Fairness): a client retrying sooner adds to the load.
    void pause_after_failure(unsigned &failures);
    void note_retry_after(long status, long seconds);
    std::chrono::milliseconds retry_after_{0};
    bool stopping() const { return stop_.load(); }

    ApiClient &client_;
    std::string collection_;
    OnChange on_change_;
    WatchOptions options_;
    WatchStats stats_;

    mutable std::mutex mutex_;
    Snapshot snapshot_;
    std::string rv_;

    std::atomic<bool> stop_{false};
    std::mutex sleep_mutex_;
    std::condition_variable sleep_cv_;
    std::thread thread_;
};

std::string object_key(const json &object); // "" when the object has no metadata.name string

} // namespace bpfnet::k8s
