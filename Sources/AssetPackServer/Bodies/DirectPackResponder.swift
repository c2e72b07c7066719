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

    /// The encoded head of the last answer on a connection but its `Date` and `Server` lines, kept for the next
    /// one while the pack's version, bytes and date are the same (made anew, it cost about 6% of the server's
    /// time under `wrk -c32`).
    struct Head {
        var version: Int
        var sha256: String
        var lastModified: Date
        var length: Int
        var bytes: ByteBuffer

        func fits(_ pack: ServedPack, length: Int) -> Bool {
            version == pack.version && lastModified == pack.lastModified && self.length == length
                && sha256 == pack.sha256
        }
    }

    /// The head (but for its `Date` and `Server` lines and the empty line that ends it) and body the router
    /// would send for `GET /assets/<id>`, or `nil` when the router must answer it; `last` is the connection's
    /// last head, taken again when it fits.
    func answer(id: String, last: inout Head?) -> (head: ByteBuffer, body: ByteBuffer)? {
        guard AssetPackID.problem(with: id) == nil, faults.isEmpty,
            let pack = catalog.snapshot.pack(withID: id),
            let bytes = packs.held(pack)
        else { return nil }
        if let last, last.fits(pack, length: bytes.readableBytes) { return (last.bytes, bytes) }
        var headers = PackController.headers(of: pack)
        headers[.mockBody] = PackController.BodyPath.direct.rawValue
        headers[.contentLength] = String(bytes.readableBytes)
        var head = ByteBuffer()
        head.writeString("HTTP/1.1 200 OK\r\n")
        for field in headers { head.writeString("\(field.name.rawName): \(field.value)\r\n") }
        last = Head(
            version: pack.version,
            sha256: pack.sha256,
            lastModified: pack.lastModified,
            length: bytes.readableBytes,
            bytes: head
        )
        return (head, bytes)
    }

    /// The request log's and the board's account of an answer for the pack `id` about to be written, whose
    /// client is `client`, or `nil` when neither records it now.
    func entry(id: String, bytes: Int, client: @autoclosure () -> String?) -> ResponseTally.Entry? {
        guard let recorder, recorder.recordsDownloads else { return nil }  // no path made for nobody
        return recorder.entry(
            .init(method: "GET", path: "/assets/" + id, range: nil, status: 200, fault: nil),
            total: bytes,
            client: client(),
            pack: id,  // the path names it plainly: no escapes to undo
            since: .now
        )
    }
}

/// Answers the requests of ``DirectPackRoute`` as soon as their bytes arrive, ahead of HTTP/1's decoder: a
/// 64 KiB pack from memory through the decoder, the HTTP types, a dozen handlers each way and the encoder cost
/// several times what writing it does (nginx answered at twice the pace).
///
/// It sits just before HTTP/1's encoder and decoder (placed there by ``HTTP1HandlerInstaller``), so it sees the
/// connection's plaintext bytes, after TLS, and its writes go straight to the socket. It reads each request head with ``DirectRequest``:
/// - a pack it can answer is answered at once: three writes (the head kept for the connection, the `Date` and
///   `Server` lines, the pack's bytes), one flush per read; while the socket takes no more (the client does
///   not read), later requests wait, and the send timeout runs;
/// - another request without a body is handed to the decoder, exactly its bytes, and the bytes after it are
///   held until the router's answer to it has been written (``routedAnswerWritten()``), so answers keep their
///   order and the decoder only ever starts at a request's first byte;
/// - anything else (a body, bytes this does not delimit) hands this and every later byte of the connection to
///   the decoder, as if this handler were not there.
///
/// Hummingbird's connection-state handler does not see these answers: its idle timeout is off (see
/// ``HTTP1HandlerInstaller``), ``RequestHeadTimeoutHandler`` is told of each answer, and a graceful shutdown
/// reaches that handler only once the answers written before it went out, so it closes the connection
/// between answers, never during one.
final class DirectPackResponder: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = IOData

    private enum Mode {
        /// Reading request heads here.
        case reading
        /// A request was handed to the decoder; later bytes wait for its answer.
        case waiting
        /// Every byte goes to the decoder.
        case passing
    }

    /// The most bytes held while the router answers or the socket is full: a client that sends more
    /// (pipelining, or a large request) has the rest of its connection handled by the decoder.
    static let maxHeld = 1 << 20
    /// The most reads a head may take here (clients send one in one piece, or a few).
    static let maxPieces = 8

    private let route: DirectPackRoute
    private let headTimeout: RequestHeadTimeoutHandler?
    private var mode = Mode.reading
    /// Within ``answer(_:)``.
    private var answering = false
    /// The server shuts down: the connection closes after the answer under way.
    private var quiescing = false
    /// Within ``channelRead(context:data:)``, whose read completes after it: bytes handed on elsewhere (once an
    /// answer went out, or the socket took more) are followed by a read complete of their own, or the
    /// handlers after the decoder would not pass them on.
    private var inRead = false
    /// Bytes received and not yet answered or handed on.
    private var unread: ByteBuffer?
    /// The reads that found the head under way incomplete.
    private var pieces = 0
    private var context: ChannelHandlerContext?
    /// The client's address, as the request log and the board show it, once the first answer needed it.
    private var client: String?
    /// The head of the last answer, for the next (see ``DirectPackRoute/Head``).
    private var head: DirectPackRoute.Head?
    /// The `Date` and `Server` lines and the end of the head, made again when the second changes.
    private var dateLines: (second: Int64, bytes: ByteBuffer) = (-1, ByteBuffer())

    init(route: DirectPackRoute, headTimeout: RequestHeadTimeoutHandler?) {
        self.route = route
        self.headTimeout = headTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        unread = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard mode != .passing else {
            context.fireChannelRead(data)
            return
        }
        inRead = true
        defer { inRead = false }
        var bytes = unwrapInboundIn(data)
        if var held = unread {
            unread = nil  // one reference: appending does not copy what is held
            held.writeBuffer(&bytes)
            bytes = held
        }
        unread = bytes
        if bytes.readableBytes > Self.maxHeld {
            pass(context)  // pipelined past what is kept waiting: the decoder's path waits for the client
        } else if mode == .reading {
            answer(context)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is ChannelShouldQuiesceEvent, mode == .reading else {
            // Waiting: the state handler knows of the request handed on, and closes once it is answered.
            if event is ChannelShouldQuiesceEvent { quiescing = true }
            context.fireUserInboundEventTriggered(event)
            return
        }
        // Requests not answered yet go to the router (whose answer says `Connection: close`); the event goes on
        // once what was written here went out: the state handler, which knows of no request, closes at once.
        pass(context)
        let written = context.eventLoop.makePromise(of: Void.self)
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        written.futureResult.whenComplete { _ in
            loopBound.value.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        }
        context.writeAndFlush(wrapOutboundOut(.byteBuffer(ByteBuffer())), promise: written)
    }

    /// The router's answer to the request handed on was written: the bytes held after it are read now.
    func routedAnswerWritten() {
        guard mode == .waiting, !quiescing, let context, context.channel.isActive else { return }
        mode = .reading
        answer(context)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        context.fireChannelWritabilityChanged()
        // Not while answering: a flush there changes writability, and the loop goes on by itself.
        if context.channel.isWritable, mode == .reading, unread != nil, !answering { answer(context) }
    }

    /// Answers the requests at the start of the unread bytes while it can; hands on the first it cannot. While
    /// the socket takes no more (more than the channel's high-water mark waits), the rest waits with it.
    private func answer(_ context: ChannelHandlerContext) {
        answering = true
        defer { answering = false }
        var (answered, unflushed) = (false, false)
        reading: while mode == .reading, var bytes = unread, bytes.readableBytes > 0 {
            switch bytes.withUnsafeReadableBytes({ DirectRequest.read($0) }) {
            case .incomplete:
                // Read again from its start each time: a head in many pieces goes to the decoder, which
                // reads on from where it stopped (a peer dripping a 16 KiB head had cost 16 KiB per byte).
                pieces += 1
                if pieces > Self.maxPieces { pass(context) }
                break reading
            case .pack(let id, let length):
                pieces = 0
                guard let answer = route.answer(id: id, last: &head) else {
                    handOn(length, context)
                    continue
                }
                if !context.channel.isWritable && unflushed {
                    context.flush()
                    unflushed = false
                }
                guard context.channel.isWritable else { break reading }  // channelWritabilityChanged goes on
                bytes.moveReaderIndex(forwardBy: length)
                unread = bytes.readableBytes > 0 ? bytes : nil
                write(answer, id: id, context)
                (answered, unflushed) = (true, true)
            case .routed(let length):
                pieces = 0
                handOn(length, context)
            case .undelimited:
                pass(context)
            }
        }
        if unflushed { context.flush() }
        if answered { headTimeout?.answered() }
    }

    private func write(_ answer: (head: ByteBuffer, body: ByteBuffer), id: String, _ context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(.byteBuffer(answer.head)), promise: nil)
        context.write(wrapOutboundOut(.byteBuffer(lines())), promise: nil)
        let count = answer.body.readableBytes
        guard let entry = route.entry(id: id, bytes: count, client: clientAddress(context)) else {
            context.write(wrapOutboundOut(.byteBuffer(answer.body)), promise: nil)
            return
        }
        let written = context.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenComplete { result in
            if case .success = result { entry.took(count) }
            entry.finish(aborted: (try? result.get()) == nil)
        }
        context.write(wrapOutboundOut(.byteBuffer(answer.body)), promise: written)
    }

    /// Hands the request in the first `length` unread bytes to the decoder; the rest waits for its answer.
    private func handOn(_ length: Int, _ context: ChannelHandlerContext) {
        guard var bytes = unread, let request = bytes.readSlice(length: length) else { return pass(context) }
        unread = bytes.readableBytes > 0 ? bytes : nil
        mode = .waiting
        forward(request, context)
    }

    /// Hands every byte to the decoder from now on.
    private func pass(_ context: ChannelHandlerContext) {
        mode = .passing
        guard let bytes = unread else { return }
        unread = nil
        forward(bytes, context)
    }

    private func forward(_ bytes: ByteBuffer, _ context: ChannelHandlerContext) {
        context.fireChannelRead(wrapInboundOut(bytes))
        if !inRead { context.fireChannelReadComplete() }
    }

    private func clientAddress(_ context: ChannelHandlerContext) -> String {
        if let client { return client }
        let address = context.channel.remoteAddress?.ipAddress ?? "?"
        client = address
        return address
    }

    /// `Date: …`, `Server: …` (as Hummingbird adds them to the router's answers) and the empty line.
    private func lines() -> ByteBuffer {
        let now = Date()
        let second = Int64(now.timeIntervalSince1970.rounded(.down))
        if second != dateLines.second {
            var bytes = ByteBuffer()
            bytes.writeString("Date: \(HTTPDate.string(now))\r\nServer: \(route.serverName)\r\n\r\n")
            dateLines = (second, bytes)
        }
        return dateLines.bytes
    }
}

/// Tells ``DirectPackResponder`` when the router's answer to a request it handed on has been written (its end's
/// write completed, so every byte before it went out too), for it to read the requests held after it.
final class RoutedAnswerHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let responder: DirectPackResponder

    init(responder: DirectPackResponder) {
        self.responder = responder
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .end = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        let written = promise ?? context.eventLoop.makePromise()
        let responder = NIOLoopBound(responder, eventLoop: context.eventLoop)
        written.futureResult.whenComplete { _ in responder.value.routedAnswerWritten() }
        context.write(data, promise: written)
    }
}
