import Foundation
import SystemPackage

/// A JSON file that holds a tool's state between runs (`ba-mock`'s `.ba-mock/state.json`, `ba-sync`'s
/// `.ba-sync/state.json`): read whole, written crash-safely through ``AtomicFile`` (temporary name, `fsync`,
/// `rename`), so a reader sees the old state or the new one and never half of one.
///
/// Dates are ISO 8601; keys are sorted, so the same state always gives the same bytes. Blocking: call it
/// from a thread that may block (``BlockingIO``).
public struct StateFile<Value: Codable & Sendable>: Sendable {
    /// The file.
    public let path: FilePath

    /// A handle on the file at `path` (nothing is read yet).
    public init(_ path: FilePath) {
        self.path = path
    }

    /// The state, or `nil` when the file (or its folder) does not exist yet: read as ``load(in:)`` reads it,
    /// relative to its folder (which may be reached through links the user chose), never through a symlink at
    /// the file, never from a FIFO or a device.
    /// - Throws: ``AssetPackFormatError`` with code `.invalidState` when the file is not a regular file, is too
    ///   large or does not decode, or `.io` when it cannot be read.
    public func load() throws -> Value? {
        BlockingIO.checkOffPool("StateFile.load")
        let folder: FileDescriptor
        do {
            let parent = path.removingLastComponent()
            folder = try FileDescriptor.openFolder(parent.isEmpty ? "." : parent)
        } catch  where error == .noSuchFileOrDirectory {
            return nil
        } catch {
            throw AssetPackFormatError.io("open the folder of", path, error)
        }
        return try folder.closeAfter { try load(in: folder) }
    }

    /// The most bytes ``load(in:)`` reads: a state file is small (the record of an export of 10 000 packs with
    /// three deltas each is about 2 MiB).
    public static var maximumSize: Int { 16 << 20 }

    /// The state, read from the file named as `path`'s last component in an open folder (`path` names it in
    /// messages): never through a symlink, never from a FIFO or a device (nothing waits, nothing reads without
    /// end), at most ``maximumSize`` bytes; `nil` when there is no such file.
    /// - Throws: ``AssetPackFormatError`` with code `.invalidState` when the file is not a regular file, is too
    ///   large or does not decode, or `.io` when it cannot be read.
    public func load(in folder: FileDescriptor) throws -> Value? {
        BlockingIO.checkOffPool("StateFile.load")
        let content: SmallFile
        do {
            content = try FileDescriptor.readSmallRegularFile(
                FilePath(path.lastComponent?.string ?? ""),
                in: folder,
                followingSymlink: false,
                maximumSize: Self.maximumSize
            )
        } catch let errno as Errno where errno == .noSuchFileOrDirectory {
            return nil
        } catch let errno as Errno where errno == .tooManySymbolicLinkLevels {
            throw notWrittenHere("is a symlink")
        } catch let errno as Errno {
            throw AssetPackFormatError.io("read", path, errno)
        }
        switch content {
        case .bytes(let bytes): return try decode(Data(bytes))
        case .notRegular(let kind): throw notWrittenHere("is \(kind), not a regular file")
        case .tooLarge: throw notWrittenHere("is larger than \(Self.maximumSize >> 20) MiB")
        }
    }

    /// Writes the state atomically.
    /// - Throws: ``AssetPackFormatError`` with code `.io`.
    public func save(_ value: Value) throws {
        BlockingIO.checkOffPool("StateFile.save")
        try AtomicFile.write(try encode(value), to: path)
    }

    /// Writes the state atomically as the file named as `path`'s last component in an open folder, never
    /// through a symlink (see ``AtomicFile/write(in:named:shownAs:permissions:_:)``).
    /// - Throws: ``AssetPackFormatError`` with code `.io`.
    public func save(_ value: Value, in folder: FileDescriptor) throws {
        BlockingIO.checkOffPool("StateFile.save")
        try AtomicFile.write(try encode(value), in: folder, named: path.lastComponent?.string ?? "", shownAs: path)
    }

    private func decode(_ data: Data) throws -> Value {
        do {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            return try decoder.decode(Value.self, from: data)
        } catch {
            throw AssetPackFormatError(
                code: .invalidState,
                message: "\(path) is damaged or from a version this tool does not understand",
                cause: error
            )
        }
    }

    private func encode(_ value: Value) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        encoder.dateEncodingStrategy = .iso8601
        do {
            return try encoder.encode(value)
        } catch {
            throw AssetPackFormatError(code: .io, message: "cannot encode the state for \(path): \(error)")
        }
    }

    private func notWrittenHere(_ what: String) -> AssetPackFormatError {
        AssetPackFormatError(
            code: .invalidState,
            message: "\(path) \(what): not a state file this tool wrote. Fix: remove it (it is written anew)"
        )
    }
}
