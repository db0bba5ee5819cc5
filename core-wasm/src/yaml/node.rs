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
///
/// The anchor and the comments are kept in one allocation that most nodes
/// (which have none) do without, so a node is 96 bytes: trees of whole
/// packages stay small and cheap to build, move and drop.
#[derive(Debug, Clone)]
pub struct Node {
    /// What the node is.
    pub kind: Kind,
    /// Presentation flags.
    pub style: Style,
    /// 1-based line where the node was read (0 for built nodes).
    pub line: u32,
    /// 1-based column where the node was read (0 for built nodes).
    pub column: u32,
    /// The short tag (`!!str`, `!!map`, `!custom`, …) as yaml.v3 records it.
    /// The standard tags are static strings, so most nodes own no tag text.
    pub tag: Cow<'static, str>,
    /// Scalar text, or the anchor name of an alias.
    pub value: String,
    /// Children: the root of a document, the items of a sequence, or
    /// alternating keys and values of a mapping.
    pub content: Vec<Node>,
    /// Anchor and comments; `None` when all are empty.
    extras: Option<Box<Extras>>,
}

/// The rarely set texts of a node.
#[derive(Debug, Clone, Default)]
struct Extras {
    anchor: String,
    head_comment: String,
    line_comment: String,
    foot_comment: String,
}

impl Extras {
    fn is_empty(&self) -> bool {
        self.anchor.is_empty()
            && self.head_comment.is_empty()
            && self.line_comment.is_empty()
            && self.foot_comment.is_empty()
    }
}

/// Equal nodes have equal kinds, styles, tags, texts, anchors, comments,
/// positions and children.
impl PartialEq for Node {
    fn eq(&self, other: &Node) -> bool {
        self.kind == other.kind
            && self.style == other.style
            && self.line == other.line
            && self.column == other.column
            && self.tag == other.tag
            && self.value == other.value
            && self.anchor() == other.anchor()
            && self.head_comment() == other.head_comment()
            && self.line_comment() == other.line_comment()
            && self.foot_comment() == other.foot_comment()
            && self.content == other.content
    }
}

impl Eq for Node {}

/// Generates the getter, setter and taker of one text kept in [`Extras`].
macro_rules! extra_text {
    ($field:ident, $set:ident, $take:ident, $what:literal) => {
        #[doc = concat!("The ", $what, " (empty when none).")]
        pub fn $field(&self) -> &str {
            self.extras.as_ref().map_or("", |e| e.$field.as_str())
        }

        #[doc = concat!("Sets the ", $what, " (empty for none).")]
        pub fn $set(&mut self, text: impl Into<String>) {
            let text = text.into();
            if text.is_empty() && self.extras.is_none() {
                return;
            }
            self.extras_mut().$field = text;
            self.drop_empty_extras();
        }

        #[doc = concat!("Takes the ", $what, " out of the node, leaving it empty.")]
        pub fn $take(&mut self) -> String {
            let Some(extras) = self.extras.as_mut() else {
                return String::new();
            };
            let text = std::mem::take(&mut extras.$field);
            self.drop_empty_extras();
            text
        }
    };
}

impl Node {
    fn bare(kind: Kind, tag: &str) -> Node {
        Node {
            kind,
            style: Style::plain(),
            line: 0,
            column: 0,
            tag: static_tag(tag),
            value: String::new(),
            content: Vec::new(),
            extras: None,
        }
    }

    /// A node read from the input (the composer's constructor): texts that
    /// are all empty take no allocation.
    #[inline]
    pub(crate) fn read(
        kind: Kind,
        style: Style,
        tag: Cow<'static, str>,
        value: String,
        anchor: String,
        [head_comment, line_comment, foot_comment]: [String; 3],
        (line, column): (u32, u32),
    ) -> Node {
        let extras = if anchor.is_empty()
            && head_comment.is_empty()
            && line_comment.is_empty()
            && foot_comment.is_empty()
        {
            None
        } else {
            Some(Box::new(Extras {
                anchor,
                head_comment,
                line_comment,
                foot_comment,
            }))
        };
        Node {
            kind,
            style,
            line,
            column,
            tag,
            value,
            content: Vec::new(),
            extras,
        }
    }

    fn extras_mut(&mut self) -> &mut Extras {
        self.extras.get_or_insert_with(Box::default)
    }

    fn drop_empty_extras(&mut self) {
        if self.extras.as_ref().is_some_and(|e| e.is_empty()) {
            self.extras = None;
        }
    }

    extra_text!(
        anchor,
        set_anchor,
        take_anchor,
        "anchor defined on this node (without `&`)"
    );
    extra_text!(
        head_comment,
        set_head_comment,
        take_head_comment,
        "comment lines above the node (with their `#`)"
    );
    extra_text!(
        line_comment,
        set_line_comment,
        take_line_comment,
        "comment at the end of the node's line"
    );
    extra_text!(
        foot_comment,
        set_foot_comment,
        take_foot_comment,
        "comment lines below the node"
    );

    /// Copies the head, line and foot comments of `other` (not its anchor).
    pub fn copy_comments_from(&mut self, other: &Node) {
        self.set_head_comment(other.head_comment());
        self.set_line_comment(other.line_comment());
        self.set_foot_comment(other.foot_comment());
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
