import SystemPackage

// Apple's `System` module, as app files import it (`import System` for `FilePath` and `FileDescriptor`), on
// Linux. swift-system is the same code published as `SystemPackage`, and this module gives it Apple's name:
// `FileDescriptor`, `FilePermissions`, `Errno` and the rest are swift-system's own types.
//
// `FilePath` is a type of its own, as Apple's `System.FilePath` is a type of its own beside swift-system's
// `SystemPackage.FilePath` on a Mac: a package that can import both (swift-nio's file system module does, with
// `#if canImport(System)`) declares one initializer for each, which would be the same initializer twice if
// this module only renamed swift-system's. It has Apple's API (System 1.1, macOS 12), stored as swift-system's.
@_exported import struct SystemPackage.Errno
@_exported import struct SystemPackage.FileDescriptor
@_exported import struct SystemPackage.FilePermissions

/// A null-terminated sequence of bytes that represents a location in the file system (Apple's
/// `System.FilePath`).
public struct FilePath: Hashable, Codable, Sendable {
    /// The path as swift-system stores it.
    package var underlying: SystemPackage.FilePath

    /// The path swift-system's type holds.
    package init(_ underlying: SystemPackage.FilePath) { self.underlying = underlying }

    /// An empty path.
    public init() { underlying = SystemPackage.FilePath() }

    /// A path from a string.
    public init(_ string: String) { underlying = SystemPackage.FilePath(string) }

    /// A path from a null-terminated C string.
    public init(cString: UnsafePointer<CChar>) { underlying = SystemPackage.FilePath(platformString: cString) }

    /// A path from a null-terminated platform string.
    public init(platformString: UnsafePointer<CInterop.PlatformChar>) {
        underlying = SystemPackage.FilePath(platformString: platformString)
    }

    /// A path from a root and components.
    public init(root: Root?, _ components: some Collection<Component>) {
        underlying = SystemPackage.FilePath(root: root, components)
    }

    /// A path from components.
    public init(root: Root?, components: Component...) {
        underlying = SystemPackage.FilePath(root: root, components)
    }

    /// The path's bytes as a string, with invalid UTF-8 repaired.
    public var string: String { underlying.string }

    /// Whether the path is empty.
    public var isEmpty: Bool { underlying.isEmpty }

    /// Whether the path starts at a root.
    public var isAbsolute: Bool { underlying.isAbsolute }

    /// Whether the path does not start at a root.
    public var isRelative: Bool { underlying.isRelative }

    /// Calls `body` with the path as a null-terminated C string.
    public func withCString<Result>(_ body: (UnsafePointer<CChar>) throws -> Result) rethrows -> Result {
        try underlying.withCString(body)
    }

    /// Calls `body` with the path as a null-terminated platform string.
    public func withPlatformString<Result>(
        _ body: (UnsafePointer<CInterop.PlatformChar>) throws -> Result
    ) rethrows -> Result {
        try underlying.withPlatformString(body)
    }
}

/// The types swift-system nests in its path, the same here.
extension FilePath {
    public typealias Component = SystemPackage.FilePath.Component
    public typealias Root = SystemPackage.FilePath.Root
    public typealias ComponentView = SystemPackage.FilePath.ComponentView

    /// The root, if any.
    public var root: Root? {
        get { underlying.root }
        set { underlying.root = newValue }
    }

    /// The components after the root.
    public var components: ComponentView {
        get { underlying.components }
        set { underlying.components = newValue }
    }

    /// The last component, if any.
    public var lastComponent: Component? { underlying.lastComponent }

    /// The last component's extension, if any.
    public var `extension`: String? {
        get { underlying.extension }
        set { underlying.extension = newValue }
    }

    /// The last component without its extension, if any.
    public var stem: String? { underlying.stem }

    /// The path without its last component.
    public func removingLastComponent() -> FilePath { FilePath(underlying.removingLastComponent()) }

    /// Removes the last component; returns whether there was one.
    @discardableResult
    public mutating func removeLastComponent() -> Bool { underlying.removeLastComponent() }

    /// The path without its root.
    public func removingRoot() -> FilePath { FilePath(underlying.removingRoot()) }

    /// Removes `prefix` when the path starts with it; returns whether it did.
    @discardableResult
    public mutating func removePrefix(_ prefix: FilePath) -> Bool { underlying.removePrefix(prefix.underlying) }

    /// Whether the path starts with `other`'s components.
    public func starts(with other: FilePath) -> Bool { underlying.starts(with: other.underlying) }

    /// Whether the path ends with `other`'s components.
    public func ends(with other: FilePath) -> Bool { underlying.ends(with: other.underlying) }

    /// The path with `other` (a string of one or more components) appended.
    public func appending(_ other: String) -> FilePath { FilePath(underlying.appending(other)) }

    /// The path with `component` appended.
    public func appending(_ component: Component) -> FilePath { FilePath(underlying.appending(component)) }

    /// The path with `components` appended.
    public func appending(_ components: some Collection<Component>) -> FilePath {
        FilePath(underlying.appending(components))
    }

    /// Appends `other` (a string of one or more components).
    public mutating func append(_ other: String) { underlying.append(other) }

    /// Appends `component`.
    public mutating func append(_ component: Component) { underlying.append(component) }

    /// Appends `components`.
    public mutating func append(_ components: some Collection<Component>) { underlying.append(components) }

    /// `other` when it is absolute, else this path with `other` appended.
    public func pushing(_ other: FilePath) -> FilePath { FilePath(underlying.pushing(other.underlying)) }

    /// Replaces the path with `other` when it is absolute, else appends it.
    public mutating func push(_ other: FilePath) { underlying.push(other.underlying) }

    /// The path with `.` removed and `..` folded into what it follows, without looking at the disk.
    public func lexicallyNormalized() -> FilePath { FilePath(underlying.lexicallyNormalized()) }

    /// Removes `.` and folds `..`, without looking at the disk.
    public mutating func lexicallyNormalize() { underlying.lexicallyNormalize() }

    /// `subpath` resolved below this path, or `nil` when it would leave it.
    public func lexicallyResolving(_ subpath: FilePath) -> FilePath? {
        underlying.lexicallyResolving(subpath.underlying).map(FilePath.init)
    }
}

extension FilePath: ExpressibleByStringLiteral, CustomStringConvertible, CustomDebugStringConvertible {
    public init(stringLiteral: String) { self.init(stringLiteral) }

    public var description: String { underlying.description }

    public var debugDescription: String { underlying.debugDescription }
}

extension String {
    /// The path's bytes as a string, with invalid UTF-8 repaired.
    public init(decoding path: FilePath) { self.init(decoding: path.underlying) }

    /// The path's bytes as a string, `nil` when they are not valid UTF-8.
    public init?(validating path: FilePath) { self.init(validating: path.underlying) }
}

extension FileDescriptor {
    /// Opens the file at `path` (Apple's `FileDescriptor.open` with System's `FilePath`); a string literal
    /// still takes swift-system's form.
    /// - Throws: `Errno`.
    @_disfavoredOverload
    public static func open(
        _ path: FilePath,
        _ mode: FileDescriptor.AccessMode,
        options: FileDescriptor.OpenOptions = FileDescriptor.OpenOptions(),
        permissions: FilePermissions? = nil,
        retryOnInterrupt: Bool = true
    ) throws -> FileDescriptor {
        try FileDescriptor.open(
            path.underlying,
            mode,
            options: options,
            permissions: permissions,
            retryOnInterrupt: retryOnInterrupt
        )
    }
}
