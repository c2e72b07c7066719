import AssetPackFormat
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Which requests ``DirectPackResponder`` answers, and with what: a plain `GET /assets/<id>` of a pack held in
/// memory (``SmallPackCache``), when no fault rule is set (a rule may change any answer). Every other request
/// goes to the router, which answers it as it always did. Its answers are on the request log and the
/// dashboard's board as the router's are.
struct DirectPackRoute: Sendable {
    let catalog: PackCatalog
    let packs: SmallPackCache
    let faults: FaultPlan
    /// The request log and the dashboard's board, or `nil` when there is neither.
    let recorder: RequestLogMiddleware?
    /// The `Server` header Hummingbird adds to the router's answers.
    let serverName: String

    /// Request headers the router's answer for a pack does not depend on (`Host` is not among the fields: it is
    /// the request's authority). Any other header (`Range`, the conditionals, `Connection: close`, a body's
    /// `Content-Length`, or one this list has not thought of) sends the request to the router.
    private static let ignoredHeaders: [HTTPField.Name] = [.userAgent, .accept, .acceptEncoding, .acceptLanguage]

    /// The headers of the last answer on a connection, kept for the next one while the pack's version, bytes
    /// and date are the same (made anew, they cost about 6% of the server's time under `wrk -c32`).
    struct Head {
        var version: Int
        var sha256: String
        var lastModified: Date
        var length: Int
        var fields: HTTPFields

        func fits(_ pack: ServedPack, length: Int) -> Bool {
            version == pack.version && lastModified == pack.lastModified && self.length == length
                && sha256 == pack.sha256
        }
    }

    /// The head and body the router would send for `request` (but for the `Date`, which
    /// ``DirectPackResponder`` adds), or `nil` when the router must answer it; `last` is the connection's
    /// last head, taken again when it fits.
    func answer(_ request: HTTPRequest, last: inout Head?) -> (pack: String, headers: HTTPFields, body: ByteBuffer)? {
        guard request.method == .get, let path = request.path, path.utf8.starts(with: "/assets/".utf8) else {
            return nil
        }
        let id = String(path.dropFirst("/assets/".count))
        guard AssetPackID.problem(with: id) == nil,
            request.headerFields.allSatisfy(Self.ignores),
            faults.isEmpty,
            let pack = catalog.snapshot.pack(withID: id),
            let bytes = packs.held(pack)
        else { return nil }
        if let last, last.fits(pack, length: bytes.readableBytes) { return (id, last.fields, bytes) }
        var headers = PackController.headers(of: pack)
        headers[.mockBody] = PackController.BodyPath.direct.rawValue
        headers[.contentLength] = String(bytes.readableBytes)
        last = Head(
            version: pack.version,
            sha256: pack.sha256,
            lastModified: pack.lastModified,
            length: bytes.readableBytes,
            fields: headers
        )
        return (id, headers, bytes)
    }

    /// Queues the request log's and the board's account of an answer for `pack` about to be written on
    /// `channel`, whose client is `client`.
    func record(_ request: HTTPRequest, pack: String, bytes: Int, client: String?, on channel: any Channel) {
        guard let recorder, let path = request.path, recorder.records(path) else { return }
        recorder.expect(
            .init(method: request.method.rawValue, path: path, range: nil, status: 200, fault: nil),
            total: bytes,
            client: client,
            pack: pack,  // the path names it plainly: no escapes to undo
            since: .now,
            on: ObjectIdentifier(channel)
        )
    }

    private static func ignores(_ field: HTTPField) -> Bool {
        ignoredHeaders.contains(field.name)
            || (field.name == .connection && field.value.lowercased() == "keep-alive")
    }
}

/// Answers the requests of ``DirectPackRoute`` on the connection's event loop, before they reach Hummingbird:
/// a 64 KiB pack from memory otherwise costs a hop to a task and back for the request, the router, two
/// middlewares and an async write, several times what sending it costs (nginx answers at twice the pace).
///
/// Placed just above Hummingbird's connection-state handler (by ``HTTP1HandlerInstaller``), so that handler
/// still sees every request and response: idle timeouts and graceful shutdown (`Connection: close` on the
/// answer under way) hold for these answers too, and so do the send timeout and the connection's other
/// handlers, which are below it. Answers keep their order: while a request given to the router has not had
/// its answer's end, every later request goes to the router too. A connection whose socket is full
/// (`isWritable` false) is answered by the router, which waits for the client.
final class DirectPackResponder: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let route: DirectPackRoute
    /// A request to answer here once its end arrives, with the answer.
    private var held: (request: HTTPRequest, pack: String, headers: HTTPFields, body: ByteBuffer)?
    /// The client's address, as the request log and the board show it, once the first answer needed it.
    private var client: String?
    /// Requests given to the router whose answer has not ended.
    private var routed = 0
    /// The headers of the last answer, for the next (see ``DirectPackRoute/Head``).
    private var head: DirectPackRoute.Head?
    /// The `Date` header, made again when the second changes.
    private var date: (second: Int64, text: String) = (-1, "")

    init(route: DirectPackRoute) {
        self.route = route
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            if routed == 0, held == nil, context.channel.isWritable, let answer = route.answer(request, last: &head) {
                held = (request, answer.pack, answer.headers, answer.body)
                return
            }
            routed += 1
            context.fireChannelRead(data)
        case .body:
            // A GET with a body: the router answers it, as it answers any request with a body.
            if let request = held?.request {
                held = nil
                routed += 1
                context.fireChannelRead(wrapInboundOut(.head(request)))
            }
            context.fireChannelRead(data)
        case .end:
            guard let answer = held else {
                context.fireChannelRead(data)
                return
            }
            held = nil
            if client == nil { client = context.channel.remoteAddress?.ipAddress ?? "?" }
            route.record(
                answer.request,
                pack: answer.pack,
                bytes: answer.body.readableBytes,
                client: client,
                on: context.channel
            )
            var headers = answer.headers
            // Appended, as Hummingbird does for the router's answers (a subscript would look for them first).
            headers.append(HTTPField(name: .date, value: httpDate()))
            headers.append(HTTPField(name: .server, value: route.serverName))
            context.write(wrapOutboundOut(.head(HTTPResponse(status: .ok, headerFields: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(answer.body)), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { routed = max(0, routed - 1) }
        context.write(data, promise: promise)
    }

    private func httpDate() -> String {
        let now = Date()
        let second = Int64(now.timeIntervalSince1970.rounded(.down))
        if second != date.second { date = (second, HTTPDate.string(now)) }
        return date.text
    }
}
