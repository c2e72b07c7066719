import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import Synchronization

/// Placed with Hummingbird's additional handlers (which see HTTP types): puts the handlers that need
/// HTTP/1 itself below the HTTP/1 codec: ``HTTP10Handler`` always, the
/// handler of ``SendfileTransport`` on plain HTTP. At the first request, when the pipeline is whole, it puts
/// ``DirectPackResponder`` just above Hummingbird's connection-state handler (where that handler is not
/// found, requests all go to the router, as they would without the responder).
///
/// The codec is found by its type, which is Hummingbird's choice, not ours. Where it is not found (an
/// update of Hummingbird moved or renamed it), nothing is installed and the server says so once, on its
/// event log: a connection without the sendfile handler is never given a `sendfile` body (see
/// ``SendfileTransport/sendsFiles(on:)``), so its packs stream through ``FileBody`` instead, with
/// `X-Mock-Body: stream`, rather than going out as marker bytes.
final class HTTP1HandlerInstaller: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    /// Finds the HTTP/1 codec in a pipeline, or `nil`.
    typealias Locate = @Sendable (ChannelPipeline.SynchronousOperations) -> (any ChannelHandler)?

    /// Says once per server that the codec was not found.
    final class MissingCodecWarning: Sendable {
        private let said = Atomic(false)
        private let log: @Sendable (String) -> Void

        init(log: @escaping @Sendable (String) -> Void) { self.log = log }

        func say(sendfile: Bool) {
            guard !said.exchange(true, ordering: .relaxed) else { return }
            log(
                "warning: Hummingbird's HTTP/1 codec is not in the connection's pipeline where ba-mock looks for it "
                    + "(has Hummingbird changed?): "
                    + (sendfile ? "sendfile is off and pack bodies stream through buffers (X-Mock-Body: stream); " : "")
                    + "HTTP/1.0 connections are not closed after their response"
            )
        }
    }

    private let sendfile: SendfileTransport?
    private let locateCodec: Locate
    private let warning: MissingCodecWarning
    /// The route of the responder to place, or `nil` when there is none.
    private let direct: DirectPackRoute?

    init(
        sendfile: SendfileTransport?,
        locateCodec: @escaping Locate,
        warning: MissingCodecWarning,
        direct: DirectPackRoute?
    ) {
        self.sendfile = sendfile
        self.locateCodec = locateCodec
        self.warning = warning
        self.direct = direct
    }

    /// Where Hummingbird 2 puts its HTTP/1 codec: an `HTTP1ToHTTPServerCodec` in the connection's pipeline.
    static let hummingbirdCodec: Locate = { operations in
        try? operations.handler(type: HTTP1ToHTTPServerCodec.self)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let operations = context.pipeline.syncOperations
        guard let codec = locateCodec(operations) else {
            warning.say(sendfile: sendfile != nil)
            return
        }
        do {
            try operations.addHandler(HTTP10Handler(), position: .before(codec))
            if let sendfile {
                try operations.addHandler(
                    sendfile.handler(for: ObjectIdentifier(context.channel)),
                    position: .before(codec)
                )
            }
            // Before the encoder, which comes before the decoder: the responder writes bytes.
            if let direct, (try? operations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)) != nil,
                let encoder = try? operations.handler(type: HTTPResponseEncoder.self)
            {
                let headTimeout = try? operations.handler(type: RequestHeadTimeoutHandler.self)
                let responder = DirectPackResponder(route: direct, headTimeout: headTimeout)
                try operations.addHandler(responder, position: .before(encoder))
                try operations.addHandler(RoutedAnswerHandler(responder: responder), position: .after(self))
            }
        } catch {
            // Only a pipeline that is closing refuses a handler; its connection serves nothing more.
            context.close(promise: nil)
        }
    }
}
