import NIOCore
import NIOHTTP1

/// Swaps body markers for file regions of their body's file, which the channel sends with `sendfile(2)`,
/// and tells the registry when each region is written.
final class SendfileHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let registry: SendfileRegistry
    private let channel: ObjectIdentifier

    init(registry: SendfileRegistry, channel: ObjectIdentifier) {
        self.registry = registry
        self.channel = channel
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .body(.byteBuffer(let buffer)) = unwrapOutboundIn(data), let marker = Marker(buffer),
            let handle = registry.queue(marker, channel: channel)
        else {
            context.write(data, promise: promise)
            return
        }
        let region = FileRegion(fileHandle: handle, readerIndex: marker.offset, endIndex: marker.offset + marker.length)
        let written = context.eventLoop.makePromise(of: Void.self)
        let (registry, channel) = (self.registry, self.channel)
        written.futureResult.whenComplete { result in
            if case .failure(let error) = result {
                registry.regionWritten(marker.token, channel: channel, failure: error)
            } else {
                registry.regionWritten(marker.token, channel: channel, failure: nil)
            }
            promise?.completeWith(result)
        }
        context.write(wrapOutboundOut(.body(.fileRegion(region))), promise: written)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        registry.attach(channel)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        registry.connectionClosed(channel)
    }
}
