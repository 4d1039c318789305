// The image server of the bulk-transfer benchmark: answers GET /blob with SIZE MiB (the size of an IPA
// ramdisk or a small disk image) from memory, so that the disk never limits what the network paths
// deliver, and every candidate path is measured against the same server.
//
//   bench_http_blob_server ADDRESS PORT SIZE_MIB
#include <httplib.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char **argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: %s ADDRESS PORT SIZE_MIB\n", argv[0]);
        return 2;
    }
    const int port = std::atoi(argv[2]);
    const size_t size = static_cast<size_t>(std::atol(argv[3])) << 20;
    // One 1 MiB chunk, sent as often as the body needs: content that is not all zeroes, no allocation per request.
    std::vector<char> chunk(1 << 20);
    for (size_t i = 0; i < chunk.size(); i++)
        chunk[i] = static_cast<char>('a' + i % 26);

    httplib::Server server;
    server.Get("/blob", [&](const httplib::Request &, httplib::Response &res) {
        res.set_content_provider(size, "application/octet-stream",
                                 [&](size_t offset, size_t length, httplib::DataSink &sink) {
                                     size_t n = std::min(length, chunk.size() - offset % chunk.size());
                                     return sink.write(chunk.data() + offset % chunk.size(), n);
                                 });
    });
    server.Get("/", [](const httplib::Request &req, httplib::Response &res) {
        res.set_content(req.remote_addr, "text/plain"); // the client address, as the e2e pod server answers
    });
    std::printf("listening on %s:%d, /blob is %zu MiB\n", argv[1], port, size >> 20);
    std::fflush(stdout);
    return server.listen(argv[1], port) ? 0 : 1;
}
