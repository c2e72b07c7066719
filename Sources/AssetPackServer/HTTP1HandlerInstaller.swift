import NIOCore
import NIOHTTPTypes
import NIOHTTPTypesHTTP1

/// Placed with Hummingbird's additional handlers (which see HTTP types): puts the handlers that need
/// HTTP/1 itself below the HTTP/1 codec: ``HTTP10Handler`` always, ``SendfileHandler`` on plain HTTP.
final class HTTP1HandlerInstaller: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart

    private let sendfile: SendfileRegistry?

    init(sendfile: SendfileRegistry?) { self.sendfile = sendfile }

    func handlerAdded(context: ChannelHandlerContext) {
        let operations = context.pipeline.syncOperations
        guard let codec = try? operations.handler(type: HTTP1ToHTTPServerCodec.self) else { return }
        try? operations.addHandler(HTTP10Handler(), position: .before(codec))
        if let sendfile {
            try? operations.addHandler(
                SendfileHandler(registry: sendfile, channel: ObjectIdentifier(context.channel)),
                position: .before(codec)
            )
        }
    }
}
