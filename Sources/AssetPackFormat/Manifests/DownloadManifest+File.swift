import Foundation
import SystemPackage

extension DownloadManifest {
    /// Reads and checks a download manifest file (one `export` wrote, or Apple's tools), as a client would
    /// receive it. Blocks: call it through ``BlockingIO``. A FIFO or a device in its place is refused unread,
    /// and nothing past ``maximumSize`` is read.
    /// - Parameter file: The manifest file.
    /// - Returns: The manifest and its size in bytes.
    /// - Throws: ``AssetPackFormatError`` with code `.io`, `.invalidJSON` or `.invalidManifest`.
    public static func read(file: FilePath) throws -> (manifest: DownloadManifest, bytes: Int64) {
        let contents: SmallFile
        do {
            contents = try FileDescriptor.readSmallRegularFile(file, followingSymlink: true, maximumSize: maximumSize)
        } catch {
            throw AssetPackFormatError(code: .io, message: "cannot read \(file): \(error)", cause: error)
        }
        switch contents {
        case .bytes(let bytes):
            return (try decode(Data(bytes), source: file.string), Int64(bytes.count))
        case .notRegular(let kind):
            throw AssetPackFormatError(code: .io, message: "\(file) is \(kind), not a download manifest file")
        case .tooLarge:
            throw AssetPackFormatError(
                code: .invalidManifest,
                message: "\(file) is larger than \(ByteFormat.string(Int64(maximumSize))), more than a manifest holds"
            )
        }
    }
}
