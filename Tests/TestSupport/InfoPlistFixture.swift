import Foundation
import SystemPackage

/// The two property-list formats an Info.plist comes in.
public enum PlistFormat: String, CaseIterable, Sendable, CustomStringConvertible {
    case xml = "FMT_XML"
    case binary = "FMT_BINARY"

    public var description: String { self == .xml ? "XML" : "binary" }
}

/// Writes `json` (an object: true/false become <true/>/<false/>, whole numbers <integer>) as a property list
/// with Python's `plistlib`, a writer independent of the Foundation reader under test.
/// - Returns: The file written.
@discardableResult
public func writeInfoPlist(_ json: String, format: PlistFormat, to path: FilePath) throws -> FilePath {
    let script = """
        import json, plistlib, sys
        value = json.loads(sys.argv[1])
        with open(sys.argv[2], "wb") as out:
            plistlib.dump(value, out, fmt=plistlib.\(format.rawValue))
        """
    let result = try runTool(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", script, json, path.string])
    guard result.status == 0 else {
        throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "plistlib failed: \(result.stderr)"])
    }
    return path
}
