import AssetPackFormat
import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import SystemPackage

/// Progress of one download, in bytes.
public struct DownloadProgress: Sendable, Hashable {
    /// Bytes on disk so far (resumed bytes included).
    public var completed: Int64
    /// The archive's size.
    public var total: Int64
}

/// Streams a pack archive into `.ba-sync/downloads/<id>.partial` while hashing it, resuming with `Range` and
/// `If-Range` after a cut (within a run and in a later one), and checks size and digest against the manifest.
struct PackDownloader: Sendable {
    let client: HTTPClient
    let store: AppGroupStore
    /// Attempts within one call; each resumes from the bytes already on disk.
    let attempts: Int
    let timeout: TimeAmount

    /// What a partial file was downloading, so that a later run never splices two versions.
    private struct PartialInfo: Codable {
        var sha256: String
        var downloadSize: Int64
        var url: String
    }

    func partialFile(_ pack: AssetPack) -> FilePath { store.downloadsFolder.appending("\(pack.id).partial") }
    private func infoFile(_ pack: AssetPack) -> FilePath { store.downloadsFolder.appending("\(pack.id).partial.json") }

    /// Downloads `pack` and returns the verified archive (the partial file, complete).
    /// - Parameters:
    ///   - progress: Called as bytes arrive.
    ///   - paused: Called when a connection broke and the download is about to resume from what is on disk.
    func download(
        _ pack: AssetPack,
        progress: @Sendable (DownloadProgress) -> Void,
        paused: @Sendable () -> Void = {}
    ) async throws -> FilePath {
        let path = partialFile(pack)
        try preparePartial(pack)
        var lastError: (any Error)?
        for attempt in 1...max(1, attempts) {
            do {
                try await fetch(pack, into: path, progress: progress)
                return try verify(pack, path)
            } catch let error as AssetPackClientError where error.code == .network && attempt < attempts {
                lastError = error
                paused()
                continue  // resume from what is on disk
            } catch let error as AssetPackClientError
                where error.code == .sizeMismatch || error.code == .digestMismatch || error.code == .httpStatus
            {
                discard(pack)
                throw error
            }
        }
        throw lastError ?? AssetPackClientError(code: .network, message: "download of \(pack.id) failed")
    }

    /// Keeps a partial file only if it is of this very archive.
    private func preparePartial(_ pack: AssetPack) throws {
        let info = try? JSONDecoder().decode(
            PartialInfo.self,
            from: Data(contentsOf: URL(fileURLWithPath: infoFile(pack).string))
        )
        if info?.sha256 != pack.sha256 || info?.downloadSize != pack.downloadSize {
            discard(pack)
            let data = try JSONEncoder().encode(
                PartialInfo(sha256: pack.sha256, downloadSize: pack.downloadSize, url: pack.url.absoluteString)
            )
            do {
                try AtomicFile.write(data, to: infoFile(pack))
            } catch let error as AssetPackFormatError {
                throw AssetPackClientError(code: .io, message: error.message, assetPackID: pack.id, cause: error)
            }
        }
    }

    /// Removes a partial download and its description.
    func discard(_ pack: AssetPack) {
        _ = unlink(partialFile(pack).string)
        _ = unlink(infoFile(pack).string)
    }

    private func fetch(_ pack: AssetPack, into path: FilePath, progress: @Sendable (DownloadProgress) -> Void)
        async throws
    {
        let fd: SystemPackage.FileDescriptor
        do {
            fd = try SystemPackage.FileDescriptor.open(
                path,
                .readWrite,
                options: [.create],
                permissions: [.ownerReadWrite, .groupRead, .otherRead]
            )
        } catch {
            throw AssetPackClientError.io("open", path, error)
        }
        defer { try? fd.close() }
        do {
            var offset = Int64((try? fd.seek(offset: 0, from: .end)) ?? 0)
            if offset > pack.downloadSize {
                _ = ftruncate(fd.rawValue, 0)
                offset = 0
            }
            if offset == pack.downloadSize { return }
            var request = HTTPClientRequest(url: pack.url.absoluteString)
            if offset > 0 {
                request.headers.add(name: "Range", value: "bytes=\(offset)-")
                request.headers.add(name: "If-Range", value: "\"\(pack.sha256)\"")
            }
            let response: HTTPClientResponse
            do {
                response = try await client.execute(request, timeout: timeout)
            } catch {
                throw AssetPackClientError(
                    code: .network,
                    message:
                        "cannot download pack \(pack.id) from \(pack.url): \(error); \(offset) bytes kept to resume",
                    assetPackID: pack.id,
                    cause: error
                )
            }
            switch response.status.code {
            case 206:
                let range = response.headers.first(name: "Content-Range") ?? ""
                guard range.hasPrefix("bytes \(offset)-") else {
                    throw AssetPackClientError(
                        code: .httpStatus,
                        message: "\(pack.url) answered a resume from byte \(offset) with Content-Range \(range)",
                        assetPackID: pack.id
                    )
                }
            case 200:
                // A whole body: the server ignored the range or the pack changed. Start over.
                offset = 0
                _ = ftruncate(fd.rawValue, 0)
                if let length = response.headers.first(name: "Content-Length").flatMap(Int64.init),
                    length != pack.downloadSize
                {
                    throw AssetPackClientError(
                        code: .sizeMismatch,
                        message:
                            "\(pack.url) sends \(length) bytes but the manifest says pack \(pack.id) has "
                            + "\(pack.downloadSize); nothing was installed",
                        assetPackID: pack.id
                    )
                }
            case 404, 410:
                throw AssetPackClientError(
                    code: .httpStatus,
                    message:
                        "\(pack.url) answered \(response.status.code): pack \(pack.id) is not there; nothing was installed",
                    assetPackID: pack.id
                )
            default:
                throw AssetPackClientError(
                    code: response.status.code >= 500 ? .network : .httpStatus,
                    message:
                        "\(pack.url) answered \(response.status.code) \(response.status.reasonPhrase) for pack \(pack.id)",
                    assetPackID: pack.id
                )
            }
            do {
                _ = try fd.seek(offset: offset, from: .start)
            } catch {
                throw AssetPackClientError.io("seek in", path, error)
            }
            var written = offset
            progress(DownloadProgress(completed: written, total: pack.downloadSize))
            do {
                for try await chunk in response.body {
                    if written + Int64(chunk.readableBytes) > pack.downloadSize {
                        throw AssetPackClientError(
                            code: .sizeMismatch,
                            message:
                                "\(pack.url) sent more than the \(pack.downloadSize) bytes the manifest gives pack "
                                + "\(pack.id); nothing was installed",
                            assetPackID: pack.id
                        )
                    }
                    try chunk.withUnsafeReadableBytes { bytes in _ = try fd.writeAll(bytes) }
                    written += Int64(chunk.readableBytes)
                    progress(DownloadProgress(completed: written, total: pack.downloadSize))
                }
            } catch let error as AssetPackClientError {
                throw error
            } catch let error as Errno {
                throw AssetPackClientError.io("write", path, error)
            } catch {
                throw AssetPackClientError(
                    code: .network,
                    message:
                        "download of pack \(pack.id) from \(pack.url) broke off at byte \(written): \(error); kept to resume",
                    assetPackID: pack.id,
                    cause: error
                )
            }
            if written < pack.downloadSize {
                throw AssetPackClientError(
                    code: .network,
                    message:
                        "download of pack \(pack.id) ended at byte \(written) of \(pack.downloadSize); kept to resume",
                    assetPackID: pack.id
                )
            }
        }
    }

    /// Checks the complete file's size and SHA-256 against the manifest.
    private func verify(_ pack: AssetPack, _ path: FilePath) throws -> FilePath {
        let size = (try? FileManager.default.attributesOfItem(atPath: path.string)[.size] as? Int64) ?? -1
        guard size == pack.downloadSize else {
            throw AssetPackClientError(
                code: .sizeMismatch,
                message:
                    "pack \(pack.id) from \(pack.url) is \(size) bytes, the manifest says \(pack.downloadSize); nothing was installed",
                assetPackID: pack.id
            )
        }
        let digest = try FileDigest.sha256(of: path)
        guard digest == pack.sha256 else {
            throw AssetPackClientError(
                code: .digestMismatch,
                message:
                    "pack \(pack.id) from \(pack.url) has SHA-256 \(digest.prefix(16))…, the manifest says "
                    + "\(pack.sha256.prefix(16))…; the download was discarded and nothing was installed",
                assetPackID: pack.id
            )
        }
        return path
    }
}
