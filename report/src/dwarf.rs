//! Field names inside global variables from DWARF types: the byte at offset 24 of
//! `struct worker { long count; long pad; } workers[4]` is `[1].pad`.
//!
//! One call per module file answers all the questions about it: the file is read and its
//! `.debug_info` scanned once for variables with a fixed address (`DW_OP_addr` or, in DWARF 5,
//! `DW_OP_addrx`), then each question walks the variable's type: typedefs and qualifiers are
//! looked through, arrays give `[i]` (`[i][j]` for several dimensions), structures, classes and
//! unions give `.member` (anonymous members and base classes add nothing; a reserved member
//! name such as libstdc++'s `_M_i` ends the path), anything else ends the path.

use addr2line::gimli;
use gimli::{AttributeValue, UnitOffset};
use std::borrow::Cow;
use std::collections::HashMap;

type R<'a> = gimli::EndianSlice<'a, gimli::RunTimeEndian>;

/// For each `(variable's file address, byte offset inside it)`, the path of the field holding
/// that byte, relative to the variable (`[3]`, `[2].count`, `.b`, or `""` for a scalar
/// variable). `None` when the file, its DWARF, the variable or its type cannot be read.
pub fn field_paths(path: &str, requests: &[(u64, u64)]) -> Vec<Option<String>> {
    let none = || vec![None; requests.len()];
    let Ok(data) = std::fs::read(path) else {
        return none();
    };
    let Ok(file) = object::File::parse(&*data) else {
        return none();
    };
    match paths_in(&file, requests) {
        Ok(v) => v,
        Err(_) => none(),
    }
}

fn paths_in(
    file: &object::File<'_>,
    requests: &[(u64, u64)],
) -> Result<Vec<Option<String>>, gimli::Error> {
    use object::{Object, ObjectSection};
    let endian = if file.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let load = |id: gimli::SectionId| -> Result<Cow<'_, [u8]>, gimli::Error> {
        Ok(file
            .section_by_name(id.name())
            .and_then(|s| s.uncompressed_data().ok())
            .unwrap_or(Cow::Borrowed(&[])))
    };
    let sections = gimli::DwarfSections::load(load)?;
    let dwarf = sections.borrow(|s| gimli::EndianSlice::new(s, endian));
    let wanted: std::collections::HashSet<u64> = requests.iter().map(|r| r.0).collect();
    // Variable address → (unit index, the variable's DIE).
    let mut units: Vec<Option<gimli::Unit<R<'_>>>> = Vec::new();
    let mut vars: HashMap<u64, (usize, UnitOffset)> = HashMap::new();
    let mut headers = dwarf.units();
    while let Some(header) = headers.next()? {
        let unit = dwarf.unit(header)?;
        let mut entries = unit.entries();
        let mut found = false;
        while let Some((_, e)) = entries.next_dfs()? {
            if e.tag() != gimli::DW_TAG_variable {
                continue;
            }
            let Some(addr) = fixed_address(&dwarf, &unit, e)? else {
                continue;
            };
            if wanted.contains(&addr) && !vars.contains_key(&addr) {
                vars.insert(addr, (units.len(), e.offset()));
                found = true;
            }
        }
        // Keep only the units that answer something (indices stay stable).
        units.push(found.then_some(unit));
    }
    Ok(requests
        .iter()
        .map(|&(addr, off)| {
            let &(u, die) = vars.get(&addr)?;
            let unit = units[u].as_ref()?;
            let ty = variable_type(unit, die).ok().flatten()?;
            field_path(&dwarf, unit, ty, off).ok()
        })
        .collect())
}

/// The address of a variable whose location is exactly one `DW_OP_addr`/`DW_OP_addrx`
/// (thread-local and register/stack variables have other expressions).
fn fixed_address(
    dwarf: &gimli::Dwarf<R<'_>>,
    unit: &gimli::Unit<R<'_>>,
    e: &gimli::DebuggingInformationEntry<'_, '_, R<'_>>,
) -> Result<Option<u64>, gimli::Error> {
    let Some(AttributeValue::Exprloc(expr)) = e.attr_value(gimli::DW_AT_location)? else {
        return Ok(None);
    };
    let mut ops = expr.operations(unit.encoding());
    let addr = match ops.next()? {
        Some(gimli::Operation::Address { address }) => address,
        Some(gimli::Operation::AddressIndex { index }) => dwarf.address(unit, index)?,
        _ => return Ok(None),
    };
    Ok(match ops.next()? {
        None => Some(addr),
        Some(_) => None,
    })
}

fn unit_ref(v: Option<AttributeValue<R<'_>>>) -> Option<UnitOffset> {
    match v {
        Some(AttributeValue::UnitRef(o)) => Some(o),
        _ => None,
    }
}

/// `DW_AT_type` of a variable, through `DW_AT_specification` / `DW_AT_abstract_origin` (a C++
/// static member's definition points at its declaration inside the class).
fn variable_type(
    unit: &gimli::Unit<R<'_>>,
    mut die: UnitOffset,
) -> Result<Option<UnitOffset>, gimli::Error> {
    for _ in 0..4 {
        let e = unit.entry(die)?;
        if let Some(t) = unit_ref(e.attr_value(gimli::DW_AT_type)?) {
            return Ok(Some(t));
        }
        match unit_ref(e.attr_value(gimli::DW_AT_specification)?)
            .or(unit_ref(e.attr_value(gimli::DW_AT_abstract_origin)?))
        {
            Some(next) => die = next,
            None => return Ok(None),
        }
    }
    Ok(None)
}

fn udata(
    e: &gimli::DebuggingInformationEntry<'_, '_, R<'_>>,
    at: gimli::DwAt,
) -> Result<Option<u64>, gimli::Error> {
    Ok(e.attr(at)?.and_then(|a| a.udata_value()))
}

/// Look through typedefs and qualifiers.
fn strip(unit: &gimli::Unit<R<'_>>, mut t: UnitOffset) -> Result<UnitOffset, gimli::Error> {
    for _ in 0..64 {
        let e = unit.entry(t)?;
        match e.tag() {
            gimli::DW_TAG_typedef
            | gimli::DW_TAG_const_type
            | gimli::DW_TAG_volatile_type
            | gimli::DW_TAG_restrict_type
            | gimli::DW_TAG_atomic_type => match unit_ref(e.attr_value(gimli::DW_AT_type)?) {
                Some(n) => t = n,
                None => return Ok(t),
            },
            _ => return Ok(t),
        }
    }
    Ok(t)
}

/// Element counts of an array type, outermost first (`None` for an unknown bound).
fn dimensions(unit: &gimli::Unit<R<'_>>, t: UnitOffset) -> Result<Vec<Option<u64>>, gimli::Error> {
    let mut dims = Vec::new();
    let mut tree = unit.entries_tree(Some(t))?;
    let mut children = tree.root()?.children();
    while let Some(child) = children.next()? {
        let e = child.entry();
        if e.tag() != gimli::DW_TAG_subrange_type && e.tag() != gimli::DW_TAG_enumeration_type {
            continue;
        }
        let count = match udata(e, gimli::DW_AT_count)? {
            Some(c) => Some(c),
            None => {
                let lower = udata(e, gimli::DW_AT_lower_bound)?.unwrap_or(0);
                match e.attr(gimli::DW_AT_upper_bound)? {
                    Some(a) => match a.sdata_value() {
                        Some(u) if u >= lower as i64 => Some(u as u64 - lower + 1),
                        _ => None,
                    },
                    None => None,
                }
            }
        };
        dims.push(count);
    }
    Ok(dims)
}

/// Size in bytes of a type, when DWARF says.
fn size_of(
    unit: &gimli::Unit<R<'_>>,
    t: UnitOffset,
    depth: u32,
) -> Result<Option<u64>, gimli::Error> {
    if depth > 32 {
        return Ok(None);
    }
    let t = strip(unit, t)?;
    let e = unit.entry(t)?;
    if let Some(s) = udata(&e, gimli::DW_AT_byte_size)? {
        return Ok(Some(s));
    }
    match e.tag() {
        gimli::DW_TAG_pointer_type
        | gimli::DW_TAG_reference_type
        | gimli::DW_TAG_rvalue_reference_type
        | gimli::DW_TAG_ptr_to_member_type => Ok(Some(unit.encoding().address_size as u64)),
        gimli::DW_TAG_array_type => {
            let Some(elem) = unit_ref(e.attr_value(gimli::DW_AT_type)?) else {
                return Ok(None);
            };
            let Some(es) = size_of(unit, elem, depth + 1)? else {
                return Ok(None);
            };
            let mut n = 1u64;
            for d in dimensions(unit, t)? {
                match d {
                    Some(d) => n = n.saturating_mul(d),
                    None => return Ok(None),
                }
            }
            Ok(Some(es.saturating_mul(n)))
        }
        _ => Ok(None),
    }
}

/// The offset of a member inside its structure (`DW_AT_data_member_location` as a constant or
/// `DW_OP_plus_uconst`; bit-fields by `DW_AT_data_bit_offset`).
fn member_offset(
    unit: &gimli::Unit<R<'_>>,
    e: &gimli::DebuggingInformationEntry<'_, '_, R<'_>>,
) -> Result<Option<u64>, gimli::Error> {
    match e.attr_value(gimli::DW_AT_data_member_location)? {
        Some(AttributeValue::Exprloc(expr)) => {
            let mut ops = expr.operations(unit.encoding());
            Ok(match ops.next()? {
                Some(gimli::Operation::PlusConstant { value }) => Some(value),
                _ => None,
            })
        }
        Some(v) => Ok(v.udata_value()),
        None => Ok(match udata(e, gimli::DW_AT_data_bit_offset)? {
            Some(bits) => Some(bits / 8),
            // A union's members have no location: they all start at 0.
            None => Some(0),
        }),
    }
}

/// Walk from a variable's type down to the innermost field holding byte `off`.
fn field_path(
    dwarf: &gimli::Dwarf<R<'_>>,
    unit: &gimli::Unit<R<'_>>,
    mut t: UnitOffset,
    mut off: u64,
) -> Result<String, gimli::Error> {
    let mut path = String::new();
    for _ in 0..32 {
        t = strip(unit, t)?;
        let e = unit.entry(t)?;
        match e.tag() {
            gimli::DW_TAG_array_type => {
                let Some(elem) = unit_ref(e.attr_value(gimli::DW_AT_type)?) else {
                    break;
                };
                let Some(es) = size_of(unit, elem, 0)?.filter(|&s| s > 0) else {
                    break;
                };
                let dims = dimensions(unit, t)?;
                // Row-major: the last dimension varies fastest. Only the first bound may be
                // unknown (`T a[][4]`), so the others give the strides.
                let mut index = off / es;
                let mut idx = vec![0u64; dims.len().max(1)];
                for k in (1..idx.len()).rev() {
                    let d = dims[k].unwrap_or(1).max(1);
                    idx[k] = index % d;
                    index /= d;
                }
                idx[0] = index;
                for i in idx {
                    path.push_str(&format!("[{i}]"));
                }
                off %= es;
                t = elem;
            }
            gimli::DW_TAG_structure_type | gimli::DW_TAG_class_type | gimli::DW_TAG_union_type => {
                let mut next: Option<(UnitOffset, u64, Option<String>)> = None;
                let mut tree = unit.entries_tree(Some(t))?;
                let mut children = tree.root()?.children();
                while let Some(child) = children.next()? {
                    let m = child.entry();
                    if m.tag() != gimli::DW_TAG_member && m.tag() != gimli::DW_TAG_inheritance {
                        continue;
                    }
                    // Static data members are declarations without a location in the object.
                    if m.attr(gimli::DW_AT_external)?.is_some()
                        || m.attr(gimli::DW_AT_declaration)?.is_some()
                    {
                        continue;
                    }
                    let Some(mt) = unit_ref(m.attr_value(gimli::DW_AT_type)?) else {
                        continue;
                    };
                    let Some(loc) = member_offset(unit, m)? else {
                        continue;
                    };
                    let size = size_of(unit, mt, 0)?.unwrap_or(0);
                    if loc <= off && off < loc + size.max(1) {
                        let name = match (m.tag(), m.attr_value(gimli::DW_AT_name)?) {
                            (gimli::DW_TAG_member, Some(n)) => {
                                Some(dwarf.attr_string(unit, n)?.to_string_lossy().into_owned())
                            }
                            _ => None,
                        };
                        next = Some((mt, loc, name));
                        break;
                    }
                }
                let Some((mt, loc, name)) = next else {
                    break;
                };
                // Reserved names (`_M_i` in std::atomic, `__data`) are the library's inside:
                // the path ends at the user's type.
                if name.as_deref().is_some_and(reserved) {
                    break;
                }
                if let Some(n) = name {
                    path.push('.');
                    path.push_str(&n);
                }
                off -= loc;
                t = mt;
            }
            _ => break,
        }
    }
    Ok(path)
}

/// An identifier reserved for the implementation in C and C++: `__x` or `_X`.
fn reserved(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() >= 2 && b[0] == b'_' && (b[1] == b'_' || b[1].is_ascii_uppercase())
}
