/// The version both executables print for `--version`: they ship together and speak one manifest format, so
/// a script that checks one knows the other.
public enum ToolVersion {
    /// The version, as `ba-mock --version` and `ba-sync --version` print it.
    public static let current = "0.2.0"
}
