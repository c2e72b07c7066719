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

    /// The state, or `nil` when the file does not exist yet.
    /// - Throws: ``AssetPackFormatError`` with code `.invalidState` when the file does not decode, or `.io`
    ///   when it cannot be read.
    public func load() throws -> Value? {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path.string))
        } catch CocoaError.fileReadNoSuchFile {
            return nil
        } catch {
            throw AssetPackFormatError(code: .io, message: "cannot read \(path): \(error)")
        }
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

    /// Writes the state atomically.
    /// - Throws: ``AssetPackFormatError`` with code `.io`.
    public func save(_ value: Value) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        encoder.dateEncodingStrategy = .iso8601
        let bytes: Data
        do {
            bytes = try encoder.encode(value)
        } catch {
            throw AssetPackFormatError(code: .io, message: "cannot encode the state for \(path): \(error)")
        }
        try AtomicFile.write(bytes, to: path)
    }
}
