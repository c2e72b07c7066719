internal import AssetPackClient
public import Foundation
public import System

/// Reads of the merged namespace, with Apple's declarations: synchronous and `nonisolated`, answered from the
/// app group without the server.
extension AssetPackManager {
    /// The contents of a file, memory-mapped by default; `assetPackID` `nil` searches every local pack.
    /// - Throws: ``ManagedBackgroundAssetsError/fileNotFound(at:)`` when no such file is local; the engine's
    ///   error for a path that is not relative, or a read that fails.
    public nonisolated func contents(
        at path: System.FilePath,
        searchingInAssetPackWithID assetPackID: String? = nil,
        options: Data.ReadingOptions = .mappedIfSafe
    ) throws -> Data {
        try FaceError.translating {
            try engine.contents(at: path.underlying, searchingInAssetPackWithID: assetPackID, options: options)
        }
    }

    /// An open, read-only descriptor of a file; the caller closes it.
    /// - Throws: ``ManagedBackgroundAssetsError/fileNotFound(at:)`` when no such file is local.
    public nonisolated func descriptor(for path: System.FilePath, searchingInAssetPackWithID assetPackID: String? = nil)
        throws -> FileDescriptor
    {
        try FaceError.translating {
            try engine.descriptor(for: path.underlying, searchingInAssetPackWithID: assetPackID)
        }
    }

    /// The URL of a file or folder: a folder split across packs is one merged folder; a well-formed URL even
    /// when nothing is there. Do not keep it beyond the current process.
    public nonisolated func url(for path: System.FilePath) throws -> URL {
        try FaceError.translating { try engine.url(for: path.underlying) }
    }

    /// The contents of a file, searching only the local packs localized in `language` (OS 27).
    /// - Throws: ``ManagedBackgroundAssetsError/fileNotFound(at:)`` when none of them has it.
    public nonisolated func contents(
        at path: System.FilePath,
        asLocalizedFor language: Locale.Language,
        options: Data.ReadingOptions = .mappedIfSafe
    ) throws -> Data {
        try FaceError.translating {
            try engine.contents(at: path.underlying, asLocalizedFor: language.bcp47, options: options)
        }
    }

    /// A descriptor of a file, searching only the local packs localized in `language` (OS 27).
    public nonisolated func descriptor(for path: System.FilePath, asLocalizedFor language: Locale.Language) throws
        -> FileDescriptor
    {
        try FaceError.translating { try engine.descriptor(for: path.underlying, asLocalizedFor: language.bcp47) }
    }

    /// The URL of a file or folder among the local packs localized in `language`, a folder merged across
    /// them (OS 27).
    public nonisolated func url(for path: System.FilePath, asLocalizedFor language: Locale.Language) throws -> URL {
        try FaceError.translating { try engine.url(for: path.underlying, asLocalizedFor: language.bcp47) }
    }
}
