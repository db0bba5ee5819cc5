//! The node tree, mirroring yaml.v3's `yaml.Node`.

use std::borrow::Cow;

/// The kind of a node (`yaml.Kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A document: exactly one child, the document's root node.
    Document,
    /// A sequence; children are the items.
    Sequence,
    /// A mapping; children alternate key, value.
    Mapping,
    /// A scalar; the text is in `value`.
    Scalar,
    /// An alias (`*name`); the anchor name is in `value`.
    Alias,
}

/// Presentation flags of a node (`yaml.Style`, a bit set).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Style(u8);

impl Style {
    /// The tag was written explicitly in the source.
    pub const TAGGED: Style = Style(1);
    /// `"double quoted"`.
    pub const DOUBLE_QUOTED: Style = Style(2);
    /// `'single quoted'`.
    pub const SINGLE_QUOTED: Style = Style(4);
    /// `|` literal block.
    pub const LITERAL: Style = Style(8);
    /// `>` folded block.
    pub const FOLDED: Style = Style(16);
    /// Flow collection (`{}` or `[]`).
    pub const FLOW: Style = Style(32);

    /// No flag set: plain scalars and block collections.
    pub const fn plain() -> Style {
        Style(0)
    }

    /// Whether every flag of `other` is set.
    pub const fn contains(self, other: Style) -> bool {
        self.0 & other.0 == other.0 && other.0 != 0
    }

    /// Whether any flag of `other` is set.
    pub const fn intersects(self, other: Style) -> bool {
        self.0 & other.0 != 0
    }

    /// Both sets of flags.
    #[must_use]
    pub const fn union(self, other: Style) -> Style {
        Style(self.0 | other.0)
    }

    /// Whether no flag is set.
    pub const fn is_plain(self) -> bool {
        self.0 == 0
    }
}

impl std::ops::BitOr for Style {
    type Output = Style;
    fn bitor(self, rhs: Style) -> Style {
        self.union(rhs)
    }
}

impl std::ops::BitOrAssign for Style {
    fn bitor_assign(&mut self, rhs: Style) {
        *self = self.union(rhs);
    }
}

/// A YAML node with everything needed to write it back as it was read:
/// tag, style, anchor, comments and children in source order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// What the node is.
    pub kind: Kind,
    /// Presentation flags.
    pub style: Style,
    /// The short tag (`!!str`, `!!map`, `!custom`, …) as yaml.v3 records it.
    /// The standard tags are static strings, so most nodes own no tag text.
    pub tag: Cow<'static, str>,
    /// Scalar text, or the anchor name of an alias.
    pub value: String,
    /// Anchor defined on this node (without `&`), empty when none.
    pub anchor: String,
    /// Children: the root of a document, the items of a sequence, or
    /// alternating keys and values of a mapping.
    pub content: Vec<Node>,
    /// Comment lines above the node (with their `#`).
    pub head_comment: String,
    /// Comment at the end of the node's line.
    pub line_comment: String,
    /// Comment lines below the node.
    pub foot_comment: String,
    /// 1-based line where the node was read (0 for built nodes).
    pub line: usize,
    /// 1-based column where the node was read (0 for built nodes).
    pub column: usize,
}

impl Node {
    fn bare(kind: Kind, tag: &str) -> Node {
        Node {
            kind,
            style: Style::plain(),
            tag: static_tag(tag),
            value: String::new(),
            anchor: String::new(),
            content: Vec::new(),
            head_comment: String::new(),
            line_comment: String::new(),
            foot_comment: String::new(),
            line: 0,
            column: 0,
        }
    }

    /// A new empty block mapping.
    pub fn new_mapping() -> Node {
        Node::bare(Kind::Mapping, "!!map")
    }

    /// A new empty block sequence.
    pub fn new_sequence() -> Node {
        Node::bare(Kind::Sequence, "!!seq")
    }

    /// A new document holding `root`.
    pub fn new_document(root: Node) -> Node {
        let mut doc = Node::bare(Kind::Document, "");
        doc.content.push(root);
        doc
    }

    /// A plain string scalar (`!!str`); written quoted when it would
    /// otherwise read back as another type, as yaml.v3 does.
    pub fn new_string(value: impl Into<String>) -> Node {
        let mut n = Node::bare(Kind::Scalar, "!!str");
        n.value = value.into();
        n
    }

    /// A scalar with an explicit short tag (`!!int`, `!!bool`, `!!null`, …).
    pub fn new_scalar(tag: &str, value: impl Into<String>) -> Node {
        let mut n = Node::bare(Kind::Scalar, tag);
        n.value = value.into();
        n
    }

    /// A `null` scalar.
    pub fn new_null() -> Node {
        Node::new_scalar("!!null", "null")
    }

    /// The root of a document node, or the node itself otherwise
    /// (kyaml's `RNode.YNode()`).
    pub fn root(&self) -> &Node {
        match self.kind {
            Kind::Document if !self.content.is_empty() => &self.content[0],
            _ => self,
        }
    }

    /// Mutable [`Node::root`].
    pub fn root_mut(&mut self) -> &mut Node {
        if self.kind == Kind::Document && !self.content.is_empty() {
            &mut self.content[0]
        } else {
            self
        }
    }

    /// Whether this is a scalar whose tag makes it a string key candidate
    /// (`!!str` or no tag), as the kpt SDK's `asString` decides.
    pub fn as_str(&self) -> Option<&str> {
        if self.kind == Kind::Scalar && (self.tag == "!!str" || self.tag.is_empty()) {
            Some(&self.value)
        } else {
            None
        }
    }

    /// Whether this is a null scalar (`~`, `null`, empty) or an empty node.
    pub fn is_null(&self) -> bool {
        self.kind == Kind::Scalar && self.tag == "!!null"
    }
}

/// `tag` as a static string when it is one of yaml.v3's standard short tags
/// (or empty), an owned copy otherwise.
pub(crate) fn static_tag(tag: &str) -> Cow<'static, str> {
    use super::resolve::{
        BINARY_TAG, BOOL_TAG, FLOAT_TAG, INT_TAG, MAP_TAG, MERGE_TAG, NULL_TAG, SEQ_TAG, STR_TAG,
        TIMESTAMP_TAG,
    };
    const KNOWN: [&str; 11] = [
        "",
        STR_TAG,
        MAP_TAG,
        SEQ_TAG,
        NULL_TAG,
        BOOL_TAG,
        INT_TAG,
        FLOAT_TAG,
        TIMESTAMP_TAG,
        BINARY_TAG,
        MERGE_TAG,
    ];
    match KNOWN.iter().find(|k| **k == tag) {
        Some(k) => Cow::Borrowed(k),
        None => Cow::Owned(tag.to_string()),
    }
}
