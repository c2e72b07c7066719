import AssetPackFormat
import Foundation
import SystemPackage

/// Reads, as Apple's `AssetPackManager` offers them; they need no server and are answered by ``reader``.
///
/// A file or a pack that is not there throws Apple's ``ManagedBackgroundAssetsError`` (`fileNotFound(at:)`,
/// `assetPackNotFound(withID:)`); ``reader`` throws the same as ``AssetPackClientError``, whose message says
/// more.
extension AssetPackManager {
    /// Whether the pack is installed (offline, synchronous).
    public nonisolated func assetPackIsAvailableLocally(withID id: String) -> Bool {
        reader.assetPackIsAvailableLocally(withID: id)
    }

    /// The installed pack record, if any (offline).
    public nonisolated func installedPack(withID id: String) -> InstalledPack? { reader.installedPack(withID: id) }

    /// Every installed pack (offline).
    public nonisolated var installedPacks: [InstalledPack] { reader.installedPacks }

    /// The contents of a file in the merged namespace (Apple's `contents(at:searchingInAssetPackWithID:options:)`):
    /// see ``AssetPackReader/contents(at:searchingInAssetPackWithID:options:)``.
    public nonisolated func contents(
        at path: FilePath,
        searchingInAssetPackWithID assetPackID: String? = nil,
        options: Data.ReadingOptions = .mappedIfSafe
    ) throws -> Data {
        try AssetPackClientError.inAppleShape {
            try reader.contents(at: path, searchingInAssetPackWithID: assetPackID, options: options)
        }
    }

    /// An open, read-only descriptor of a file in the merged namespace (Apple's `descriptor(for:)`): see
    /// ``AssetPackReader/descriptor(for:searchingInAssetPackWithID:)``.
    public nonisolated func descriptor(for path: FilePath, searchingInAssetPackWithID assetPackID: String? = nil) throws
        -> FileDescriptor
    {
        try AssetPackClientError.inAppleShape {
            try reader.descriptor(for: path, searchingInAssetPackWithID: assetPackID)
        }
    }

    /// The URL of a file or folder in the merged namespace (Apple's `url(for:)`): see
    /// ``AssetPackReader/url(for:)``.
    public nonisolated func url(for path: FilePath) throws -> URL {
        try AssetPackClientError.inAppleShape { try reader.url(for: path) }
    }

    /// The contents of a file as localized for `language` (Apple's `contents(at:asLocalizedFor:options:)`):
    /// see ``AssetPackReader/contents(at:asLocalizedFor:options:)``.
    public nonisolated func contents(
        at path: FilePath,
        asLocalizedFor language: String,
        options: Data.ReadingOptions = .mappedIfSafe
    ) throws -> Data {
        try AssetPackClientError.inAppleShape {
            try reader.contents(at: path, asLocalizedFor: language, options: options)
        }
    }

    /// A descriptor of a file as localized for `language` (Apple's `descriptor(for:asLocalizedFor:)`).
    public nonisolated func descriptor(for path: FilePath, asLocalizedFor language: String) throws -> FileDescriptor {
        try AssetPackClientError.inAppleShape { try reader.descriptor(for: path, asLocalizedFor: language) }
    }

    /// The URL of a file or folder as localized for `language` (Apple's `url(for:asLocalizedFor:)`).
    public nonisolated func url(for path: FilePath, asLocalizedFor language: String) throws -> URL {
        try AssetPackClientError.inAppleShape { try reader.url(for: path, asLocalizedFor: language) }
    }

    /// Which installed pack a path resolves to, if any.
    public nonisolated func assetPackID(containing path: FilePath) throws -> String? {
        try reader.assetPackID(containing: path)
    }

    /// Re-hashes installed files against their pack's index: see ``AssetPackReader/verify(assetPackWithID:)``.
    public nonisolated func verify(assetPackWithID id: String? = nil) throws -> Int {
        try reader.verify(assetPackWithID: id)
    }
}
