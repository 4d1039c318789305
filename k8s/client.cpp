#include "k8s/client.hpp"

#include "core/yaml_documents.hpp"

#include "core/log.hpp"

#include <curl/curl.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <vector>

namespace bpfnet::k8s {

namespace {

std::string read_file(const std::string &path, const char *what) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw ConfigError(std::string(what) + ": cannot read " + path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string trim(std::string s) {
    auto not_space = [](unsigned char c) {
        return !std::isspace(c);
    };
    s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
    s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
    return s;
}

std::string resolve(const std::string &base_dir, const std::string &p) {
    if (p.empty() || p[0] == '/')
        return p;
    return base_dir + "/" + p;
}

// Finds the entry NAME in a kubeconfig list (clusters/contexts/users) and returns its FIELD map.
YAML::Node named_entry(const YAML::Node &root, const std::string &list, const std::string &name,
                       const std::string &field, const std::string &path) {
    const YAML::Node entries = root[list];
    if (!entries || !entries.IsSequence())
        throw ConfigError(path + ": missing '" + list + "'");
    for (const auto &e : entries) {
        if (e.IsMap() && e["name"] && e["name"].IsScalar() && e["name"].as<std::string>() == name) {
            const YAML::Node f = e[field];
            if (!f || !f.IsMap())
                throw ConfigError(path + ": " + list + "[" + name + "] has no '" + field + "' map");
            return f;
        }
    }
    throw ConfigError(path + ": no entry named '" + name + "' in '" + list + "'");
}

std::string scalar(const YAML::Node &map, const char *key) {
    const YAML::Node v = map[key];
    if (!v || !v.IsScalar())
        return {};
    return v.as<std::string>();
}

struct CurlGlobal {
    CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
    ~CurlGlobal() { curl_global_cleanup(); }
};

void curl_global() {
    static CurlGlobal g;
}

size_t append_body(char *data, size_t size, size_t n, void *user) {
    static_cast<std::string *>(user)->append(data, size * n);
    return size * n;
}

struct StreamCtx {
    const std::function<bool(std::string_view)> *on_data = nullptr;
    const std::function<bool()> *should_stop = nullptr;
    CURL *curl = nullptr;
    std::string error_body; // body of a non-2xx answer: a Status, not a stream
    bool aborted = false;
    std::chrono::steady_clock::duration idle_limit{}; // zero: no limit
    std::chrono::steady_clock::time_point last_data = std::chrono::steady_clock::now();
    bool stalled = false;
};

size_t stream_body(char *data, size_t size, size_t n, void *user) {
    auto *ctx = static_cast<StreamCtx *>(user);
    long status = 0;
    curl_easy_getinfo(ctx->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status < 200 || status > 299) {
        if (ctx->error_body.size() < 65536)
            ctx->error_body.append(data, size * n);
        return size * n;
    }
    ctx->last_data = std::chrono::steady_clock::now();
    if ((*ctx->should_stop)() || !(*ctx->on_data)(std::string_view(data, size * n))) {
        ctx->aborted = true;
        return 0; // CURLE_WRITE_ERROR: abort
    }
    return size * n;
}

// Called about once a second while the stream is idle (and whenever data arrives).
int stream_progress(void *user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    auto *ctx = static_cast<StreamCtx *>(user);
    if ((*ctx->should_stop)()) {
        ctx->aborted = true;
        return 1;
    }
    if (ctx->idle_limit.count() > 0 && std::chrono::steady_clock::now() - ctx->last_data > ctx->idle_limit) {
        ctx->stalled = true;
        return 1;
    }
    return 0;
}

} // namespace

// --- configuration -----------------------------------------------------------------------------------------

std::string base64_decode(std::string_view in) {
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z')
            return c - 'A';
        if (c >= 'a' && c <= 'z')
            return c - 'a' + 26;
        if (c >= '0' && c <= '9')
            return c - '0' + 52;
        if (c == '+' || c == '-')
            return 62;
        if (c == '/' || c == '_')
            return 63;
        return -1;
    };
    std::string out;
    unsigned buffer = 0;
    int bits = 0;
    for (char c : in) {
        if (c == '=' || c == '\n' || c == '\r' || c == ' ')
            continue;
        const int v = value(c);
        if (v < 0)
            throw ConfigError("invalid base64 character");
        buffer = (buffer << 6) | static_cast<unsigned>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<char>((buffer >> bits) & 0xffu));
        }
    }
    return out;
}

ClusterConfig in_cluster_config(const std::string &sa_dir) {
    const char *host = std::getenv("KUBERNETES_SERVICE_HOST");
    const char *port = std::getenv("KUBERNETES_SERVICE_PORT");
    if (!host || !*host)
        throw ConfigError("in-cluster: KUBERNETES_SERVICE_HOST is not set");
    if (!port || !*port)
        throw ConfigError("in-cluster: KUBERNETES_SERVICE_PORT is not set");
    ClusterConfig c;
    const std::string h = host;
    c.server = "https://" + (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + port;
    c.token_file = sa_dir + "/token";
    c.ca_file = sa_dir + "/ca.crt";
    struct stat st {};
    if (::stat(c.token_file.c_str(), &st) != 0)
        throw ConfigError("in-cluster: service-account token " + c.token_file + " does not exist");
    if (::stat(c.ca_file.c_str(), &st) != 0)
        throw ConfigError("in-cluster: service-account CA " + c.ca_file + " does not exist");
    return c;
}

namespace {

// The kubeconfig field NAME-data, base64-decoded, or "".
std::string decoded(const YAML::Node &node, const std::string &name, const std::string &what) {
    const std::string text = scalar(node, (name + "-data").c_str());
    if (text.empty())
        return {};
    try {
        return base64_decode(text);
    } catch (const ConfigError &) {
        throw ConfigError(what + " " + name + "-data is not valid base64");
    }
}

// The user's credentials: a bearer token (token, tokenFile) and/or a client certificate with its key.
void read_user(const YAML::Node &user, const std::string &user_name, const std::string &dir, const std::string &path,
               ClusterConfig &c) {
    const std::string what = path + ": user '" + user_name + "'";
    for (const char *unsupported : {"exec", "auth-provider", "username", "password"})
        if (user[unsupported])
            throw ConfigError(what + " authenticates with '" + unsupported +
                              "', which bpfnet-loader does not support: use a token, tokenFile or a client "
                              "certificate (client-certificate and client-key, or their -data forms)");
    c.token = scalar(user, "token");
    c.token_file = resolve(dir, scalar(user, "tokenFile"));
    c.client_cert_file = resolve(dir, scalar(user, "client-certificate"));
    c.client_key_file = resolve(dir, scalar(user, "client-key"));
    c.client_cert_data = decoded(user, "client-certificate", what);
    c.client_key_data = decoded(user, "client-key", what);
    const bool cert = !c.client_cert_file.empty() || !c.client_cert_data.empty();
    const bool key = !c.client_key_file.empty() || !c.client_key_data.empty();
    if (cert != key)
        throw ConfigError(what + " has a client " +
                          (cert ? "certificate without its key" : "key without its certificate"));
}

} // namespace

ClusterConfig kubeconfig_config(const std::string &path) {
    return kubeconfig_from_text(read_file(path, "kubeconfig"), path);
}

ClusterConfig kubeconfig_from_text(const std::string &text, const std::string &path) {
    YAML::Node root;
    try {
        const std::vector<YAML::Node> documents = load_yaml_documents(text);
        if (!documents.empty())
            root = documents.front();
    } catch (const YAML::Exception &e) {
        throw ConfigError(path + ": not valid YAML: " + e.what());
    }
    if (!root.IsMap())
        throw ConfigError(path + ": not a kubeconfig (top level is not a map)");
    const std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
    const std::string context_name = scalar(root, "current-context");
    if (context_name.empty())
        throw ConfigError(path + ": 'current-context' is not set");
    const YAML::Node context = named_entry(root, "contexts", context_name, "context", path);
    const std::string cluster_name = scalar(context, "cluster");
    if (cluster_name.empty())
        throw ConfigError(path + ": context '" + context_name + "' has no 'cluster'");
    const YAML::Node cluster = named_entry(root, "clusters", cluster_name, "cluster", path);

    ClusterConfig c;
    c.server = scalar(cluster, "server");
    if (c.server.empty())
        throw ConfigError(path + ": cluster '" + cluster_name + "' has no 'server'");
    if (c.server.rfind("https://", 0) != 0 && c.server.rfind("http://", 0) != 0)
        throw ConfigError(path + ": cluster '" + cluster_name + "' server '" + c.server + "' is not an http(s) URL");
    while (!c.server.empty() && c.server.back() == '/')
        c.server.pop_back();
    c.ca_file = resolve(dir, scalar(cluster, "certificate-authority"));
    const std::string ca_data = scalar(cluster, "certificate-authority-data");
    if (!ca_data.empty()) {
        try {
            c.ca_data = base64_decode(ca_data);
        } catch (const ConfigError &) {
            throw ConfigError(path + ": cluster '" + cluster_name + "' certificate-authority-data is not valid base64");
        }
    }
    c.insecure_skip_tls_verify = scalar(cluster, "insecure-skip-tls-verify") == "true";

    const std::string user_name = scalar(context, "user");
    if (!user_name.empty()) {
        const YAML::Node user = named_entry(root, "users", user_name, "user", path);
        read_user(user, user_name, dir, path, c);
    }
    return c;
}

ClusterConfig load_cluster_config(const std::string &path_or_empty) {
    return path_or_empty.empty() ? in_cluster_config() : kubeconfig_config(path_or_empty);
}

TokenSource::TokenSource(const ClusterConfig &config) : static_token_(config.token), file_(config.token_file) {}

std::string TokenSource::current() {
    std::lock_guard lock(mutex_);
    if (file_.empty())
        return static_token_;
    struct stat st {};
    if (::stat(file_.c_str(), &st) != 0) {
        log_warn("cannot stat token file; using the last token read", {{"file", file_}});
        return cached_;
    }
    if (st.st_mtim.tv_sec != mtime_.tv_sec || st.st_mtim.tv_nsec != mtime_.tv_nsec || st.st_size != size_) {
        std::ifstream in(file_);
        if (!in) {
            log_warn("cannot read token file; using the last token read", {{"file", file_}});
            return cached_;
        }
        std::ostringstream s;
        s << in.rdbuf();
        cached_ = trim(s.str());
        mtime_ = st.st_mtim;
        size_ = st.st_size;
        log_debug("token file (re)read", {{"file", file_}});
    }
    return cached_;
}

// --- requests ----------------------------------------------------------------------------------------------

ApiError::ApiError(long status, std::string reason, std::string message)
    : std::runtime_error("API error " + std::to_string(status) + (reason.empty() ? "" : " " + reason) +
                         (message.empty() ? "" : ": " + message)),
      status_(status), reason_(std::move(reason)), message_(std::move(message)) {}

void throw_api_error(const Response &r) {
    std::string reason, message;
    if (r.body.is_object()) {
        if (r.body.contains("reason") && r.body["reason"].is_string())
            reason = r.body["reason"].get<std::string>();
        if (r.body.contains("message") && r.body["message"].is_string())
            message = r.body["message"].get<std::string>();
    }
    if (message.empty())
        message = r.raw.substr(0, 200);
    if (r.status == 409)
        throw ConflictError(r.status, reason, message);
    throw ApiError(r.status, reason, message);
}

// TLS sessions and DNS answers are shared by every handle of the client (libcurl supports that across
// threads, with these locks); connections are not (libcurl does not support sharing its connection cache
// between threads): each easy handle keeps its own, and idle handles are pooled so that the next request
// reuses one with its live connection (keep-alive) instead of a new TCP and TLS handshake.
struct ApiClient::SharedConnections {
    CURLSH *share = nullptr;
    std::mutex locks[CURL_LOCK_DATA_LAST];
    std::mutex pool_mutex;
    std::vector<CURL *> idle; // easy handles no thread is using, each with its connection cache
    static constexpr std::size_t kMaxIdle = 8;

    SharedConnections() {
        share = curl_share_init();
        if (!share)
            throw TransportError("curl_share_init failed");
        curl_share_setopt(share, CURLSHOPT_LOCKFUNC, lock);
        curl_share_setopt(share, CURLSHOPT_UNLOCKFUNC, unlock);
        curl_share_setopt(share, CURLSHOPT_USERDATA, this);
        for (curl_lock_data data : {CURL_LOCK_DATA_SSL_SESSION, CURL_LOCK_DATA_DNS})
            curl_share_setopt(share, CURLSHOPT_SHARE, data);
    }
    ~SharedConnections() {
        for (CURL *curl : idle)
            curl_easy_cleanup(curl);
        curl_share_cleanup(share);
    }
    SharedConnections(const SharedConnections &) = delete;
    SharedConnections &operator=(const SharedConnections &) = delete;

    static void lock(CURL *, curl_lock_data data, curl_lock_access, void *self) {
        static_cast<SharedConnections *>(self)->locks[data].lock();
    }
    static void unlock(CURL *, curl_lock_data data, void *self) {
        static_cast<SharedConnections *>(self)->locks[data].unlock();
    }

    // An idle handle (options reset, its connections kept), or a new one.
    CURL *acquire() {
        {
            std::lock_guard lock(pool_mutex);
            if (!idle.empty()) {
                CURL *curl = idle.back();
                idle.pop_back();
                curl_easy_reset(curl);
                return curl;
            }
        }
        CURL *curl = curl_easy_init();
        if (!curl)
            throw TransportError("curl_easy_init failed");
        return curl;
    }
    void release(CURL *curl) {
        {
            std::lock_guard lock(pool_mutex);
            if (idle.size() < kMaxIdle) {
                idle.push_back(curl);
                return;
            }
        }
        curl_easy_cleanup(curl);
    }
};

ApiClient::ApiClient(ClusterConfig config) : config_(std::move(config)), token_(config_) {
    curl_global();
    shared_ = std::make_unique<SharedConnections>();
}

ApiClient::~ApiClient() = default;

std::string ApiClient::user_agent() {
    return std::string("bpfnet-loader/") + BPFNET_VERSION;
}

void ApiClient::prepare(void *handle, const std::string &path, void *&headers_out, const char *content_type) {
    CURL *curl = static_cast<CURL *>(handle);
    curl_easy_setopt(curl, CURLOPT_SHARE, shared_->share);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, user_agent().c_str());
    // HTTP/2 over TLS when the server offers it.
    curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
    const std::string url = config_.server + path;
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 5L);
    curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
    if (!config_.ca_file.empty())
        curl_easy_setopt(curl, CURLOPT_CAINFO, config_.ca_file.c_str());
    if (!config_.ca_data.empty()) {
        curl_blob blob{const_cast<char *>(config_.ca_data.data()), config_.ca_data.size(), CURL_BLOB_COPY};
        curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &blob);
    }
    if (!config_.client_cert_file.empty())
        curl_easy_setopt(curl, CURLOPT_SSLCERT, config_.client_cert_file.c_str());
    if (!config_.client_key_file.empty())
        curl_easy_setopt(curl, CURLOPT_SSLKEY, config_.client_key_file.c_str());
    if (!config_.client_cert_data.empty()) {
        curl_blob blob{const_cast<char *>(config_.client_cert_data.data()), config_.client_cert_data.size(),
                       CURL_BLOB_COPY};
        curl_easy_setopt(curl, CURLOPT_SSLCERT_BLOB, &blob);
        curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
    }
    if (!config_.client_key_data.empty()) {
        curl_blob blob{const_cast<char *>(config_.client_key_data.data()), config_.client_key_data.size(),
                       CURL_BLOB_COPY};
        curl_easy_setopt(curl, CURLOPT_SSLKEY_BLOB, &blob);
        curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (config_.insecure_skip_tls_verify) {
        curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    curl_slist *headers = curl_slist_append(nullptr, "Accept: application/json");
    headers = curl_slist_append(headers, (std::string("Content-Type: ") + content_type).c_str());
    const std::string token = token_.current();
    if (!token.empty())
        headers = curl_slist_append(headers, ("Authorization: Bearer " + token).c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    headers_out = headers;
}

namespace {

// The path with fieldManager added to its query, for writes.
std::string with_field_manager(const std::string &method, const std::string &path) {
    if (method != "POST" && method != "PUT" && method != "PATCH")
        return path;
    return path + (path.find('?') == std::string::npos ? "?" : "&") + "fieldManager=" + ApiClient::kFieldManager;
}

} // namespace

Response ApiClient::request(const std::string &method, const std::string &path, const json *body,
                            std::chrono::milliseconds timeout) {
    void *headers = nullptr;
    const char *content_type = method == "PATCH" ? "application/merge-patch+json" : "application/json";
    CURL *curl = shared_->acquire();
    prepare(curl, with_field_manager(method, path), headers, content_type);
    Response r;
    std::string payload;
    if (body)
        payload = body->dump();
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
    if (body || method == "POST" || method == "PUT" || method == "PATCH") {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, payload.c_str());
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(payload.size()));
    }
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &r.raw);
    const CURLcode rc = curl_easy_perform(curl);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r.status);
    curl_off_t retry_after = 0;
    if (curl_easy_getinfo(curl, CURLINFO_RETRY_AFTER, &retry_after) == CURLE_OK)
        r.retry_after_s = static_cast<long>(retry_after);
    curl_slist_free_all(static_cast<curl_slist *>(headers));
    if (rc == CURLE_OK)
        shared_->release(curl); // its connection stays open for the next request
    else
        curl_easy_cleanup(curl); // a failed transfer's connection is not worth keeping
    if (rc != CURLE_OK)
        throw TransportError(method + " " + path + ": " + curl_easy_strerror(rc));
    r.body = json::parse(r.raw, nullptr, false);
    return r;
}

namespace {
json checked(Response r) {
    if (r.status < 200 || r.status > 299)
        throw_api_error(r);
    if (r.body.is_discarded())
        throw ApiError(r.status, "BadResponse", "response body is not JSON");
    return std::move(r.body);
}
} // namespace

json ApiClient::get(const std::string &path, std::chrono::milliseconds timeout) {
    return checked(request("GET", path, nullptr, timeout));
}
json ApiClient::put(const std::string &path, const json &body, std::chrono::milliseconds timeout) {
    return checked(request("PUT", path, &body, timeout));
}
json ApiClient::post(const std::string &path, const json &body, std::chrono::milliseconds timeout) {
    return checked(request("POST", path, &body, timeout));
}
json ApiClient::patch(const std::string &path, const json &merge_patch, std::chrono::milliseconds timeout) {
    return checked(request("PATCH", path, &merge_patch, timeout));
}
json ApiClient::del(const std::string &path) {
    return checked(request("DELETE", path));
}

ApiClient::StreamResult ApiClient::stream(const std::string &path, const std::function<bool(std::string_view)> &on_data,
                                          const std::function<bool()> &should_stop, long max_seconds,
                                          std::chrono::milliseconds idle_limit) {
    void *headers = nullptr;
    // A watch holds its connection for minutes: a handle of its own, not one of the pool's.
    CURL *curl = curl_easy_init();
    if (!curl)
        throw TransportError("curl_easy_init failed");
    prepare(curl, path, headers);
    StreamCtx ctx;
    ctx.on_data = &on_data;
    ctx.should_stop = &should_stop;
    ctx.curl = curl;
    ctx.idle_limit = idle_limit;
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, max_seconds);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, stream_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &ctx);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, stream_progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &ctx);
    const CURLcode rc = curl_easy_perform(curl);
    StreamResult result;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &result.status);
    curl_off_t retry_after = 0;
    if (curl_easy_getinfo(curl, CURLINFO_RETRY_AFTER, &retry_after) == CURLE_OK)
        result.retry_after_s = static_cast<long>(retry_after);
    curl_slist_free_all(static_cast<curl_slist *>(headers));
    curl_easy_cleanup(curl);
    result.aborted = ctx.aborted;
    result.stalled = ctx.stalled;
    result.transport_ok = rc == CURLE_OK;
    if (rc != CURLE_OK)
        result.error = curl_easy_strerror(rc);
    result.error_body = std::move(ctx.error_body);
    return result;
}

// --- watch -------------------------------------------------------------------------------------------------

std::string object_key(const json &object) {
    if (!object.is_object() || !object.contains("metadata") || !object["metadata"].is_object())
        return {};
    const json &m = object["metadata"];
    if (!m.contains("name") || !m["name"].is_string() || m["name"].get<std::string>().empty())
        return {};
    std::string key;
    if (m.contains("namespace") && m["namespace"].is_string() && !m["namespace"].get<std::string>().empty())
        key = m["namespace"].get<std::string>() + "/";
    return key + m["name"].get<std::string>();
}

namespace {
std::optional<std::string> resource_version_of(const json &object) {
    if (!object.is_object() || !object.contains("metadata") || !object["metadata"].is_object())
        return std::nullopt;
    const json &m = object["metadata"];
    if (!m.contains("resourceVersion") || !m["resourceVersion"].is_string())
        return std::nullopt;
    return m["resourceVersion"].get<std::string>();
}
} // namespace

Watcher::Watcher(ApiClient &client, std::string collection, OnChange on_change, WatchOptions options)
    : client_(client), collection_(std::move(collection)), on_change_(std::move(on_change)),
      options_(std::move(options)) {
    if (!options_.random) {
        auto engine = std::make_shared<std::mt19937_64>(std::random_device{}());
        options_.random = [engine] {
            return std::uniform_real_distribution<double>(0.0, 1.0)(*engine);
        };
    }
}

Watcher::~Watcher() {
    stop();
}

void Watcher::start() {
    if (thread_.joinable())
        return;
    stop_ = false;
    thread_ = std::thread([this] { run(); });
}

void Watcher::stop() {
    {
        std::lock_guard lock(sleep_mutex_);
        stop_ = true;
    }
    sleep_cv_.notify_all();
    if (thread_.joinable())
        thread_.join();
}

std::string Watcher::resource_version() const {
    std::lock_guard lock(mutex_);
    return rv_;
}

Snapshot Watcher::snapshot() const {
    std::lock_guard lock(mutex_);
    return snapshot_;
}

void Watcher::read(const std::function<void(const Snapshot &)> &read) const {
    std::lock_guard lock(mutex_);
    read(snapshot_);
}

std::chrono::milliseconds Watcher::backoff(unsigned attempt) const {
    const double base = static_cast<double>(options_.initial_backoff.count()) *
                        std::pow(2.0, static_cast<double>(std::min(attempt, 30u)));
    const double capped = std::min(base, static_cast<double>(options_.max_backoff.count()));
    const double factor = 1.0 - options_.jitter + 2.0 * options_.jitter * options_.random();
    const double d = std::min(capped * factor, static_cast<double>(options_.max_backoff.count()));
    return std::chrono::milliseconds(static_cast<long long>(std::max(d, 0.0)));
}

void Watcher::note_retry_after(long status, long seconds) {
    if ((status == 429 || status == 503) && seconds > 0)
        retry_after_ = std::chrono::seconds(std::min(seconds, 300L));
}

void Watcher::pause_after_failure(unsigned &failures) {
    const std::chrono::milliseconds d = std::max(backoff(failures++), retry_after_);
    retry_after_ = std::chrono::milliseconds(0);
    pause(d);
}

void Watcher::pause(std::chrono::milliseconds d) {
    if (options_.sleep) {
        options_.sleep(d);
        return;
    }
    std::unique_lock lock(sleep_mutex_);
    sleep_cv_.wait_for(lock, d, [this] { return stop_.load(); });
}

void Watcher::deliver() {
    // Only this thread writes snapshot_, so it can be handed out without a copy; snapshot() readers on
    // other threads only read it under mutex_.
    if (on_change_)
        on_change_(snapshot_);
}

// Query parameters are appended to the collection, which may carry its own (a label selector).
static std::string with_query(const std::string &collection, const std::string &query) {
    return collection + (collection.find('?') == std::string::npos ? "?" : "&") + query;
}

// A continue token is opaque (base64 from kube-apiserver): escaped for the query string.
static std::string query_escape(const std::string &value) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : value) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += kHex[c >> 4];
            out += kHex[c & 15];
        }
    }
    return out;
}

// What a snapshot keeps of an object: all of it but metadata.managedFields, which nothing here reads and which
// is often the largest part of a small object (every field manager's field set). Dropping it is safe for the
// objects written back whole (Leases, by PUT): an update without managedFields keeps the server's.
static json kept_of(json object) {
    if (object.contains("metadata") && object["metadata"].is_object())
        object["metadata"].erase("managedFields");
    return object;
}

bool Watcher::list_page(const std::string &continue_token, Snapshot &into, std::string &next, std::string &rv,
                        bool &expired) {
    std::string query = "limit=" + std::to_string(options_.page_size);
    if (!continue_token.empty())
        query += "&continue=" + query_escape(continue_token);
    Response r;
    try {
        r = client_.request("GET", with_query(collection_, query));
    } catch (const std::exception &e) {
        log_warn("k8s list failed", {{"path", collection_}, {"error", e.what()}});
        return false;
    }
    if (r.status == 410 && !continue_token.empty()) {
        expired = true;
        return false;
    }
    if (r.status < 200 || r.status > 299) {
        note_retry_after(r.status, r.retry_after_s);
        log_warn("k8s list failed", {{"path", collection_}, {"status", std::to_string(r.status)}});
        return false;
    }
    const json &b = r.body;
    const auto page_rv = resource_version_of(b);
    if (b.is_discarded() || !b.is_object() || !page_rv || !b.contains("items") || !b["items"].is_array()) {
        ++stats_.bad_input;
        log_warn("k8s list: malformed response", {{"path", collection_}});
        return false;
    }
    // The page's objects are moved into the snapshot, not copied: a page of 500 is held once.
    for (json &item : r.body.at("items")) {
        const std::string key = object_key(item);
        if (key.empty()) {
            ++stats_.bad_input;
            log_warn("k8s list: item without metadata.name skipped", {{"path", collection_}});
            continue;
        }
        into[key] = kept_of(std::move(item));
    }
    const json &meta = b["metadata"];
    next = meta.is_object() && meta.contains("continue") && meta["continue"].is_string()
               ? meta["continue"].get<std::string>()
               : std::string();
    rv = *page_rv;
    return true;
}

bool Watcher::list() {
    ++stats_.lists;
    // Every page of one list is served from the snapshot of its first (same resourceVersion); when the server
    // no longer has it (a continue older than its compaction window) the list starts over, once.
    for (int attempt = 0; attempt < 2; attempt++) {
        Snapshot fresh;
        std::string token, rv;
        bool expired = false, failed = false;
        do {
            std::string next;
            if (!list_page(token, fresh, next, rv, expired)) {
                failed = true;
                break;
            }
            token = std::move(next);
        } while (!token.empty() && !stopping());
        if (expired) {
            log_info("k8s list: continue expired, listing again", {{"path", collection_}});
            continue;
        }
        if (failed || stopping())
            return false;
        {
            std::lock_guard lock(mutex_);
            snapshot_ = std::move(fresh);
            rv_ = rv;
        }
        ++stats_.listed;
        log_debug("k8s listed", {{"path", collection_}, {"resourceVersion", rv}});
        deliver();
        return true;
    }
    return false;
}

WatchEvent decode_watch_line(std::string_view line) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
        line.remove_suffix(1);
    WatchEvent e;
    if (line.empty())
        return e; // Kind::Blank
    const json event = json::parse(line, nullptr, false);
    auto bad = [&](const char *why) {
        e.kind = WatchEvent::Kind::Bad;
        e.detail = why;
        return e;
    };
    if (event.is_discarded())
        return bad("not JSON");
    if (!event.is_object() || !event.contains("type") || !event["type"].is_string() || !event.contains("object") ||
        !event["object"].is_object())
        return bad("not a watch event");
    const std::string type = event["type"].get<std::string>();
    const json &object = event["object"];
    if (type == "ERROR") {
        const bool gone =
            object.contains("code") && object["code"].is_number_integer() && object["code"].get<long>() == 410;
        e.kind = gone ? WatchEvent::Kind::Expired : WatchEvent::Kind::Error;
        e.detail = object.contains("message") && object["message"].is_string() ? object["message"].get<std::string>()
                                                                               : std::string();
        return e;
    }
    const auto rv = resource_version_of(object);
    if (!rv)
        return bad("object without metadata.resourceVersion");
    e.resource_version = *rv;
    if (type == "BOOKMARK") {
        e.kind = WatchEvent::Kind::Bookmark;
        return e;
    }
    e.key = object_key(object);
    if (e.key.empty())
        return bad("object without metadata.name");
    if (type == "ADDED" || type == "MODIFIED")
        e.kind = WatchEvent::Kind::Changed;
    else if (type == "DELETED")
        e.kind = WatchEvent::Kind::Deleted;
    else
        return bad("unknown event type");
    e.type = type;
    e.object = object;
    return e;
}

bool Watcher::apply_line(std::string_view line, Outcome &outcome) {
    WatchEvent event = decode_watch_line(line);
    switch (event.kind) {
    case WatchEvent::Kind::Blank:
        return true;
    case WatchEvent::Kind::Bad:
        ++stats_.bad_input;
        log_warn("k8s watch: bad event, reconnecting",
                 {{"path", collection_}, {"why", event.detail}, {"line", std::string(line.substr(0, 120))}});
        outcome = Outcome::Failed;
        return false;
    case WatchEvent::Kind::Expired:
        ++stats_.expired;
        log_info("k8s watch: resourceVersion expired, re-listing", {{"path", collection_}, {"msg", event.detail}});
        outcome = Outcome::Relist;
        return false;
    case WatchEvent::Kind::Error:
        ++stats_.bad_input;
        log_warn("k8s watch: ERROR event, re-listing", {{"path", collection_}, {"msg", event.detail}});
        outcome = Outcome::FailedRelist;
        return false;
    case WatchEvent::Kind::Bookmark: {
        ++stats_.bookmarks;
        std::lock_guard lock(mutex_);
        rv_ = event.resource_version;
        return true;
    }
    case WatchEvent::Kind::Changed:
    case WatchEvent::Kind::Deleted:
        break;
    }
    {
        std::lock_guard lock(mutex_);
        if (event.kind == WatchEvent::Kind::Changed)
            snapshot_[event.key] = kept_of(std::move(event.object));
        else
            snapshot_.erase(event.key);
        rv_ = event.resource_version;
    }
    ++stats_.events;
    if (log_level() <= LogLevel::Debug)
        log_debug("k8s event",
                  {{"path", collection_}, {"type", event.type}, {"object", event.key}, {"rv", event.resource_version}});
    deliver();
    return true;
}

Watcher::Outcome Watcher::watch_once() {
    ++stats_.watches;
    const std::string rv = resource_version();
    const std::string path = with_query(collection_, "watch=1&allowWatchBookmarks=true&resourceVersion=" + rv) +
                             "&timeoutSeconds=" + std::to_string(options_.timeout_seconds);
    std::string buffer;
    Outcome outcome = Outcome::Reconnect;
    bool abandoned = false;
    constexpr std::size_t kMaxLine = 16u << 20; // one event larger than this is not plausible
    auto on_data = [&](std::string_view data) {
        buffer.append(data);
        std::size_t start = 0;
        for (std::size_t nl; (nl = buffer.find('\n', start)) != std::string::npos; start = nl + 1) {
            if (!apply_line(std::string_view(buffer).substr(start, nl - start), outcome)) {
                abandoned = true;
                return false;
            }
        }
        buffer.erase(0, start);
        if (buffer.size() > kMaxLine) {
            ++stats_.bad_input;
            log_warn("k8s watch: oversized event, reconnecting", {{"path", collection_}});
            outcome = Outcome::Failed;
            abandoned = true;
            return false;
        }
        return true;
    };
    ApiClient::StreamResult r;
    try {
        r = client_.stream(
            path, on_data, [this] { return stopping(); }, options_.timeout_seconds + 30,
            std::chrono::duration_cast<std::chrono::milliseconds>(options_.idle_timeout));
    } catch (const std::exception &e) {
        log_warn("k8s watch failed", {{"path", collection_}, {"error", e.what()}});
        return Outcome::Failed;
    }
    if (stopping())
        return Outcome::Reconnect;
    if (abandoned)
        return outcome;
    if (r.stalled) {
        // Connected, yet nothing (no event, no bookmark) for the idle timeout: the connection or the server
        // behind it may be stuck, and what the watch shows stale. A new watch from the last resourceVersion
        // gets whatever it missed (or 410, and then a list), on a new connection if this one is dead.
        ++stats_.stalls;
        log_warn("k8s watch: stalled, reconnecting",
                 {{"path", collection_}, {"idle_s", std::to_string(options_.idle_timeout.count())}});
        return Outcome::Stalled;
    }
    if (r.status == 410) {
        ++stats_.expired;
        log_info("k8s watch: 410 Gone, re-listing", {{"path", collection_}});
        return Outcome::Relist;
    }
    if (r.status < 200 || r.status > 299) {
        note_retry_after(r.status, r.retry_after_s);
        const json body = json::parse(r.error_body, nullptr, false);
        const std::string message = body.is_object() && body.contains("message") && body["message"].is_string()
                                        ? body["message"].get<std::string>()
                                        : r.error_body.substr(0, 200);
        log_warn("k8s watch refused", {{"path", collection_}, {"status", std::to_string(r.status)}, {"msg", message}});
        return Outcome::Failed;
    }
    if (!r.transport_ok || !buffer.empty()) {
        ++stats_.bad_input;
        log_warn("k8s watch: stream dropped or truncated, reconnecting",
                 {{"path", collection_}, {"error", r.error}, {"partial_bytes", std::to_string(buffer.size())}});
        return Outcome::Failed;
    }
    return Outcome::Reconnect; // the server ended the watch normally (timeoutSeconds)
}

void Watcher::run() {
    unsigned failures = 0;
    unsigned quick_relists = 0; // 410s right after a list: a server that keeps expiring must not make us spin
    bool need_list = true;
    while (!stopping()) {
        if (need_list) {
            if (!list()) {
                ++stats_.failures;
                pause_after_failure(failures);
                continue;
            }
            need_list = false;
        }
        const std::uint64_t before = stats_.events + stats_.bookmarks;
        const Outcome o = watch_once();
        if (stopping())
            break;
        const bool progressed = stats_.events + stats_.bookmarks != before;
        if (progressed) {
            failures = 0;
            quick_relists = 0;
        }
        switch (o) {
        case Outcome::Relist:
            need_list = true;
            if (!progressed && ++quick_relists > 1)
                pause_after_failure(failures);
            break;
        case Outcome::FailedRelist:
            need_list = true;
            ++stats_.failures;
            pause_after_failure(failures);
            break;
        case Outcome::Stalled:
            break; // it waited the idle timeout already: watch again at once, without backing off
        case Outcome::Reconnect:
            if (!progressed) // a watch that ends at once, again and again, must not spin
                pause_after_failure(failures);
            break;
        case Outcome::Failed:
            ++stats_.failures;
            pause_after_failure(failures);
            break;
        }
    }
}

} // namespace bpfnet::k8s
