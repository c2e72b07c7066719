// Apple's `System` module, as app files import it (`import System` for `FilePath` and `FileDescriptor`), on
// Linux: swift-system is the same code published as `SystemPackage`, so this module only gives it Apple's name.
// An app's `FilePath` is then the very type `BackgroundAssets` takes and returns.
@_exported import SystemPackage
